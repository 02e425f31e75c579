import { readFileSync } from 'node:fs';
import { StfError } from '@wds/stf-runtime';
import { describe, expect, it } from 'vitest';
import { describeVersion } from '../src/index.js';
import { depsWith, fakeRuntime } from './fakes.js';

const workspace = { id: 'ws-1', ddl_policy_group_id: null, created_by: null };
const row = { id: 'v-1', stf_id: 'stf-1', version: '1.0', runtime: 'javascript' as const, code: Buffer.from('x'), input_schema: null, output_schema: null };
const head = { stf_id: 'stf-1', stf_version_id: 'v-1', version: '1.0', runtime: 'javascript' };
// What the origin-style docker STF of @wds/stf-runtime's tests prints for {"operation":"describe"} (its container run
// there asserts it prints exactly this file).
const originAnswer = JSON.parse(
  readFileSync(new URL('../../stf-runtime/test/fixtures/docker/origin-stf/describe.json', import.meta.url), 'utf8'),
) as { data: { input_schema: unknown; operations: unknown } };
const dockerRow = { ...row, runtime: 'docker' as const };
const dockerHead = { ...head, runtime: 'docker' };

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

  it("reads the origin platform's describe answer: output.data.input_schema and its operations", async () => {
    const docker = fakeRuntime(async () => ({ output: originAnswer, logs: [], duration_ms: 1 }));
    const d = await describeVersion(depsWith({ docker }), { workspace, userId: 'u', version: dockerRow });
    expect(d).toEqual({
      ...dockerHead,
      input_schema: originAnswer.data.input_schema,
      output_schema: null,
      operations: originAnswer.data.operations,
      source: 'run',
    });
    expect(docker.requests[0]).toMatchObject({ input: { operation: 'describe' } });
    expect(docker.requests[0]?.sql).toBeUndefined();
  });

  it('keeps our own shape first, and takes operations, output_schema and description from either place', async () => {
    const answer = (output: unknown) => fakeRuntime(async () => ({ output, logs: [], duration_ms: 1 }));
    const ops = { add: { description: 'adds', required: ['a', 'b'], optional: [] } };
    // Ours at the top wins over anything under data.
    expect(
      await describeVersion(depsWith({ javascript: answer({ input_schema: { type: 'object' }, data: { input_schema: { type: 'string' } } }) }), {
        workspace,
        userId: 'u',
        version: row,
      }),
    ).toEqual({ ...head, input_schema: { type: 'object' }, output_schema: null, source: 'run' });
    // Under data: output_schema and description too; a description beside data counts when data has none.
    expect(
      await describeVersion(
        depsWith({ javascript: answer({ status: 'success', description: 'outer', data: { output_schema: { type: 'number' }, operations: ops } }) }),
        { workspace, userId: 'u', version: row },
      ),
    ).toEqual({ ...head, input_schema: null, output_schema: { type: 'number' }, operations: ops, description: 'outer', source: 'run' });
    // Operations alone (as a list too) are an answer; a data object naming nothing is not.
    expect(await describeVersion(depsWith({ javascript: answer({ operations: ['a', 'b'] }) }), { workspace, userId: 'u', version: row })).toEqual({
      ...head,
      input_schema: null,
      output_schema: null,
      operations: ['a', 'b'],
      source: 'run',
    });
    expect(await describeVersion(depsWith({ javascript: answer({ status: 'success', data: { rows: [] } }) }), { workspace, userId: 'u', version: row })).toEqual({
      ...head,
      input_schema: null,
      output_schema: null,
      source: 'none',
    });
  });
});
