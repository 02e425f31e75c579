import { StfError } from '@wds/stf-runtime';
import { describe, expect, it } from 'vitest';
import { describeVersion } from '../src/index.js';
import { depsWith, fakeRuntime } from './fakes.js';

const workspace = { id: 'ws-1', ddl_policy_group_id: null };
const row = { id: 'v-1', stf_id: 'stf-1', version: '1.0', runtime: 'javascript' as const, code: Buffer.from('x'), input_schema: null, output_schema: null };
const head = { stf_id: 'stf-1', stf_version_id: 'v-1', version: '1.0', runtime: 'javascript' };

describe('describeVersion', () => {
  it('answers stored schemas without running the code', async () => {
    const js = fakeRuntime(async () => Promise.reject(new Error('must not run')));
    const d = await describeVersion(depsWith({ javascript: js }), { workspace, userId: 'u', version: { ...row, input_schema: { type: 'object' } } });
    expect(d).toEqual({ ...head, input_schema: { type: 'object' }, output_schema: null, source: 'stored' });
    expect(js.requests).toEqual([]);
  });

  it("asks the code (operation: describe, no sql()) and keeps only object schemas and a text description", async () => {
    const js = fakeRuntime(async () => ({ output: { input_schema: { type: 'object' }, output_schema: [1], description: 'adds' }, logs: [], duration_ms: 1 }));
    const d = await describeVersion(depsWith({ javascript: js }), { workspace, userId: 'u', version: row });
    expect(d).toEqual({ ...head, input_schema: { type: 'object' }, output_schema: null, description: 'adds', source: 'run' });
    expect(js.requests[0]).toMatchObject({ input: { operation: 'describe' }, sources: {}, caller: 'u' });
    expect(js.requests[0]?.sql).toBeUndefined();
  });

  it("is source none when the code's answer names no schema, with the run's error when it failed", async () => {
    const silent = fakeRuntime(async () => ({ output: 42, logs: [], duration_ms: 1 }));
    expect(await describeVersion(depsWith({ javascript: silent }), { workspace, userId: 'u', version: row })).toEqual({
      ...head,
      input_schema: null,
      output_schema: null,
      source: 'none',
    });
    const failing = fakeRuntime(async () => Promise.reject(new StfError('runtime', 'no describe')));
    expect(await describeVersion(depsWith({ javascript: failing }), { workspace, userId: 'u', version: row })).toEqual({
      ...head,
      input_schema: null,
      output_schema: null,
      source: 'none',
      error: { kind: 'runtime', message: 'no describe' },
    });
  });
});
