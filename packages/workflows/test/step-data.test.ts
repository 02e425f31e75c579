// Issue 31: what a recorded run keeps of each step's input and output — secrets masked, credentials redacted, each
// value capped with a truncation marker — and how the engine records it on each kind of step.
import type { EffectResult } from '@wds/effect-runner';
import { describe, expect, it } from 'vitest';
import {
  boundedStepData,
  executeWorkflow,
  joinStepData,
  type ResolvedEffect,
  type ResolvedStf,
  type RunProgress,
  splitStepData,
  type StepRunners,
  stepDataKeeper,
  truncatedValue,
  type WorkflowDefinition,
} from '../src/index.js';

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe('stepDataKeeper', () => {
  it('keeps a value within the cap as it is, and 0 keeps nothing', () => {
    const keep = stepDataKeeper({ maxBytes: 100, secrets: [] });
    expect(keep?.({ a: [1, 'two', null], b: { c: true } })).toEqual({ a: [1, 'two', null], b: { c: true } });
    expect(keep?.(undefined)).toBeNull();
    expect(stepDataKeeper({ maxBytes: 0, secrets: ['x'] })).toBeUndefined();
  });

  it('masks every secret in strings, keys and numbers; hostile secrets stay literal', () => {
    const secrets = ['canary-"quoted"-1', 'canary-$$-2', '4242', 'canary-/*-3', "canary-'; DROP-4"];
    const keep = stepDataKeeper({ maxBytes: 10_000, secrets });
    const value = {
      text: `Bearer ${secrets[0]} and ${secrets[1]}`,
      [secrets[2] as string]: 'key',
      pin: 4242,
      nested: [{ deep: `x${secrets[3]}y` }, secrets[4]],
      __proto__: 'kept as a key',
      ok: 'nothing secret $& $1',
    };
    const kept = keep?.(JSON.parse(JSON.stringify(value)));
    const text = JSON.stringify(kept);
    for (const s of secrets) expect(text).not.toContain(s);
    expect(kept).toMatchObject({ text: 'Bearer *** and ***', '***': 'key', pin: '***', nested: [{ deep: 'x***y' }, '***'], ok: 'nothing secret $& $1' });
    // A secret containing another is masked whole, not half.
    expect(stepDataKeeper({ maxBytes: 100, secrets: ['abc', 'abcdef'] })?.('xabcdefx')).toBe('x***x');
  });

  it('a value over the cap is the marker: its size, and a preview cut on a character boundary within the cap', () => {
    for (const maxBytes of [64, 100, 1000]) {
      const keep = stepDataKeeper({ maxBytes, secrets: [] });
      for (const value of ['é'.repeat(2000), { quote: '"'.repeat(3000) }, ['😀'.repeat(500), '\n\u0001'.repeat(200)], 'a'.repeat(maxBytes)]) {
        const kept = keep?.(value) as { truncated: true; bytes: number; preview: string };
        expect(kept).toMatchObject({ truncated: true, bytes: bytes(value) });
        expect(bytes(kept)).toBeLessThanOrEqual(maxBytes);
        expect(JSON.stringify(value).startsWith(kept.preview)).toBe(true);
        expect(kept.preview).not.toMatch(/\uFFFD/);
      }
    }
    // A cap smaller than the marker itself: an empty preview, the size still said.
    expect(truncatedValue('"long text"', 11, 5)).toEqual({ truncated: true, bytes: 11, preview: '' });
    // Masked before measured: the preview never holds a secret.
    const masked = stepDataKeeper({ maxBytes: 80, secrets: ['canary-secret'] })?.('canary-secret '.repeat(50)) as { preview: string };
    expect(masked.preview).toMatch(/^"\*\*\* \*\*\* /);
  });
});

describe('split and join', () => {
  it('steps go without their data, which is found again by kind and index; a hidden reader gets nulls', () => {
    const records = [
      { kind: 'input' as const, index: 0, name: 'a', status: 'succeeded' as const, input: { type: 'Table', name: 't' }, output: [1] },
      { kind: 'stf' as const, index: 0, status: 'failed' as const, input: { n: 1 } },
      { kind: 'effect' as const, index: 0, status: 'skipped' as const },
    ];
    const { steps, data } = splitStepData(records);
    expect(steps.some((s) => 'input' in s || 'output' in s)).toBe(false);
    expect(data).toEqual([
      { kind: 'input', index: 0, input: { type: 'Table', name: 't' }, output: [1] },
      { kind: 'stf', index: 0, input: { n: 1 } },
    ]);
    const stored = JSON.parse(JSON.stringify(data));
    expect(joinStepData(steps, stored, true).map((s) => [s.input, s.output])).toEqual([
      [{ type: 'Table', name: 't' }, [1]],
      [{ n: 1 }, null],
      [null, null],
    ]);
    expect(joinStepData(steps, stored, false).map((s) => [s.input, s.output])).toEqual([
      [null, null],
      [null, null],
      [null, null],
    ]);
    expect(joinStepData(steps, null, true).every((s) => s.input === null && s.output === null)).toBe(true);
  });

  it("a run's step data in all stays within its bound: later values become bare markers, so the record can be written", () => {
    const data = [0, 1, 2].map((index) => ({ kind: 'stf' as const, index, input: 'x'.repeat(40), output: 'y'.repeat(40) }));
    expect(boundedStepData([])).toBeNull();
    expect(boundedStepData(data, 10_000)?.data).toEqual(data);
    const bounded = boundedStepData(data, 130) as { data: { input?: unknown; output?: unknown }[]; text: string };
    expect(bounded.data.map((d) => [d.input, d.output])).toEqual([
      ['x'.repeat(40), 'y'.repeat(40)],
      ['x'.repeat(40), { truncated: true, bytes: 42, preview: '' }],
      [{ truncated: true, bytes: 42, preview: '' }, { truncated: true, bytes: 42, preview: '' }],
    ]);
    expect(JSON.parse(bounded.text)).toEqual(bounded.data);
  });
});

const stf = (n: number): ResolvedStf => ({ stf_id: `stf-${n}`, stf_version_id: `v-${n}`, version: '1', runtime: 'javascript', code: Buffer.from(''), sealed_secrets: [] });
const answer = (status: number, body: unknown): EffectResult => ({ status, ok: status < 400, headers: {}, body, attempts: 1, duration_ms: 1, idempotency_key: 'k' });
const SECRET = 'canary-stf-secret-31';

const definition: WorkflowDefinition = {
  input_schema: null,
  input_steps: [
    {
      name: 'rates',
      source: { type: 'Fetch', url: 'http://ada:pw-canary@127.0.0.1/rates?api_key=canary-query&day=1', headers: { Authorization: 'Bearer canary-fetch', Accept: 'application/json' } },
    },
  ],
  stf_steps: [
    { stf_version_id: 'v-0', pin_version: false, input_mappings: [] },
    { stf_version_id: 'v-1', pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].n' }, target: 'n' }] },
  ],
  effect_steps: [{ effect_version_id: 'ev-0', pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].auth' }, target: 'auth' }] }],
};
const effect: ResolvedEffect = {
  effect_id: 'e-0',
  effect_version_id: 'ev-0',
  version: '1',
  spec: {
    url: 'http://127.0.0.1/hook?token=canary-const-query',
    method: 'POST',
    header_mappings: [
      { source: { type: 'Variable', value: '$.auth' }, target: 'Authorization' },
      { source: { type: 'Const', value: 'canary-const-key' }, target: 'X-Api-Key' },
      { source: { type: 'Const', value: 'visible' }, target: 'X-Trace' },
    ],
    body_mappings: [{ source: { type: 'Variable', value: '$.auth' }, target: 'copy' }],
  },
};

function runners(): StepRunners {
  return {
    loadSource: async () => ({ eur: 2, echoed: 'Bearer canary-fetch' }),
    runStf: async (s, input) =>
      s.stf_id === 'stf-0' ? { ok: true, output: { n: (input as { n: number }).n * 2, auth: `Bearer ${SECRET}` } } : { ok: true, output: { final: (input as { n: number }).n + 1 } },
    // The endpoint echoes what it was sent.
    runEffect: async () => answer(201, { got: { authorization: `Bearer ${SECRET}`, 'x-api-key': 'canary-const-key' } }),
  };
}

describe('executeWorkflow with a keeper', () => {
  it('records each step: a source and its value, an STF input and output, an effect request and answer — without a secret', async () => {
    const keep = stepDataKeeper({ maxBytes: 10_000, secrets: [SECRET] });
    const result = await executeWorkflow(definition, { n: 5 }, { stfs: [stf(0), stf(1)], effects: [effect] }, runners(), { runId: 'r', ...(keep ? { stepData: keep } : {}) });
    expect(result.status).toBe('succeeded');
    const [source, first, second, call] = result.steps;
    expect(source).toMatchObject({
      input: { type: 'Fetch', method: 'GET', url: 'http://127.0.0.1/rates?api_key=%5Bredacted%5D&day=1', headers: { Authorization: '[redacted]', Accept: 'application/json' } },
      output: { eur: 2, echoed: '***' },
    });
    expect(first).toMatchObject({ input: { n: 5 }, output: { n: 10, auth: 'Bearer ***' } });
    expect(second).toMatchObject({ input: { n: 10 }, output: { final: 11 } });
    expect(call).toMatchObject({
      input: {
        method: 'POST',
        url: 'http://127.0.0.1/hook?token=%5Bredacted%5D',
        headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', 'x-trace': 'visible', 'content-type': 'application/json' },
        body: { copy: 'Bearer ***' },
      },
      output: { status: 201, body: { got: { authorization: '***', 'x-api-key': '***' } } },
    });
    const text = JSON.stringify(result.steps);
    for (const canary of [SECRET, 'canary-fetch', 'pw-canary', 'canary-query', 'canary-const-query', 'canary-const-key']) expect(text, canary).not.toContain(canary);
    // What the steps passed on is untouched: the next step got the real value.
    expect(result.output).toEqual({ final: 11 });
  });

  it('a failed STF keeps its input and no output; skipped steps keep nothing; without a keeper no record has data', async () => {
    const keep = stepDataKeeper({ maxBytes: 10_000, secrets: [] });
    const failing: StepRunners = { ...runners(), runStf: async () => ({ ok: false, error: { kind: 'runtime', message: 'no' } }) };
    const result = await executeWorkflow(definition, { n: 1 }, { stfs: [stf(0), stf(1)], effects: [effect] }, failing, { runId: 'r', ...(keep ? { stepData: keep } : {}) });
    expect(result.steps.map((s) => [s.status, 'input' in s, 'output' in s])).toEqual([
      ['succeeded', true, true],
      ['failed', true, false],
      ['skipped', false, false],
      ['skipped', false, false],
    ]);
    const bare = await executeWorkflow(definition, { n: 1 }, { stfs: [stf(0), stf(1)], effects: [effect] }, runners(), { runId: 'r' });
    expect(bare.steps.some((s) => 'input' in s || 'output' in s)).toBe(false);
  });

  it('a resumed attempt keeps the data of the steps it reuses', async () => {
    const keep = stepDataKeeper({ maxBytes: 10_000, secrets: [] });
    const reports: RunProgress[] = [];
    const opts = { runId: 'r', ...(keep ? { stepData: keep } : {}) };
    await executeWorkflow(definition, { n: 5 }, { stfs: [stf(0), stf(1)], effects: [effect] }, runners(), { ...opts, onProgress: async (p) => void reports.push(structuredClone(p)) });
    const afterFirstStf = reports[1] as RunProgress;
    const resumed = await executeWorkflow(definition, { n: 5 }, { stfs: [stf(0), stf(1)], effects: [effect] }, runners(), { ...opts, attempt: 2, resume: afterFirstStf });
    expect(resumed.steps[1]).toMatchObject({ attempt: 1, input: { n: 5 }, output: { n: 10 } });
    expect(resumed.steps[2]).toMatchObject({ attempt: 2, input: { n: 10 }, output: { final: 11 } });
  });
});
