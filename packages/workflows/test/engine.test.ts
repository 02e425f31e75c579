import { describe, expect, it } from 'vitest';
import type { EffectResult } from '@wds/effect-runner';
import {
  buildStepInput,
  executeWorkflow,
  parseVariable,
  readVariable,
  type ResolvedEffect,
  type ResolvedStf,
  type RunProgress,
  type StepRunners,
  type WorkflowDefinition,
} from '../src/index.js';

const scope = { input: { a: { b: 2 }, items: [{ sku: 'x' }] }, sources: { prices: { eur: 1.1 } }, steps: [{ total: 10 }, 'second'] };

describe('variables', () => {
  it('parses the three roots and refuses anything else', () => {
    expect(parseVariable('$input')).toEqual({ kind: 'input', rest: '' });
    expect(parseVariable('$input.a.b')).toEqual({ kind: 'input', rest: '.a.b' });
    expect(parseVariable('$sources.prices.eur')).toEqual({ kind: 'sources', name: 'prices', rest: '.eur' });
    expect(parseVariable('$steps[1]')).toEqual({ kind: 'steps', index: 1, rest: '' });
    expect(parseVariable('$steps[0].total')).toEqual({ kind: 'steps', index: 0, rest: '.total' });
    for (const bad of ['$env.SECRET', 'env.SECRET', '$inputs', 'inputs.a', '$steps.0', 'steps.0', 'steps.0.total', '$sources', 'sources', '$input..a', '$input.a b']) {
      expect(parseVariable(bad), bad).toHaveProperty('error');
    }
  });

  it('reads values; a missing field is null', () => {
    expect(readVariable('$input.a.b', scope)).toBe(2);
    expect(readVariable('$input.items[0].sku', scope)).toBe('x');
    expect(readVariable('$sources.prices.eur', scope)).toBe(1.1);
    expect(readVariable('$steps[0].total', scope)).toBe(10);
    expect(readVariable('$steps[1]', scope)).toBe('second');
    expect(readVariable('$input.nope.deeper', scope)).toBeNull();
    expect(readVariable('$steps[5]', scope)).toBeNull();
    expect(readVariable('$sources.unknown', scope)).toBeNull();
  });

  it('builds a step input from mappings (nested targets, constants, the whole value), else the fallback', () => {
    expect(
      buildStepInput(
        [
          { source: { type: 'Variable', value: '$input.a.b' }, target: 'n' },
          { source: { type: 'Const', value: 'EUR' }, target: 'price.currency' },
          { source: { type: 'Variable', value: '$sources.prices.eur' }, target: 'price.rate' },
        ],
        scope,
        'fallback',
      ),
    ).toEqual({ n: 2, price: { currency: 'EUR', rate: 1.1 } });
    expect(buildStepInput([{ source: { type: 'Variable', value: '$steps[1]' }, target: '$' }], scope, null)).toBe('second');
    expect(buildStepInput([], scope, 'fallback')).toBe('fallback');
    const polluted = buildStepInput([{ source: { type: 'Const', value: 'x' }, target: '__proto__.polluted' }], scope, null);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(polluted).toEqual({});
  });
});

const stf = (n: number): ResolvedStf => ({ stf_id: `stf-${n}`, stf_version_id: `v-${n}`, version: '1', runtime: 'javascript', code: Buffer.from(''), sealed_secrets: [] });
const effect = (n: number): ResolvedEffect => ({
  effect_id: `e-${n}`,
  effect_version_id: `ev-${n}`,
  version: '1',
  spec: { url: 'http://127.0.0.1/', method: 'POST', header_mappings: [], body_mappings: [] },
});
const ok = (status: number): EffectResult => ({ status, ok: status < 400, headers: {}, body: null, attempts: 1, duration_ms: 1, idempotency_key: 'k' });

function def(over: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return {
    input_schema: null,
    input_steps: [{ name: 'rates', source: { type: 'Fetch', url: 'http://127.0.0.1/rates' } }],
    stf_steps: [
      { stf_version_id: 'v-0', pin_version: false, input_mappings: [] },
      { stf_version_id: 'v-1', pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].n' }, target: 'n' }] },
    ],
    effect_steps: [
      { effect_version_id: 'ev-0', pin_version: false, input_mappings: [] },
      { effect_version_id: 'ev-1', pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$input.id' }, target: 'id' }] },
    ],
    ...over,
  };
}

function runners(over: Partial<StepRunners> = {}) {
  const calls: string[] = [];
  const r: StepRunners = {
    loadSource: async (step) => {
      calls.push(`source:${step.name}`);
      return { eur: 2 };
    },
    runStf: async (s, input, sources) => {
      calls.push(`stf:${s.stf_id}:${JSON.stringify(input)}`);
      if (s.stf_id === 'stf-0') return { ok: true, output: { n: (input as { n: number }).n * (sources.rates as { eur: number }).eur } };
      return { ok: true, output: { final: (input as { n: number }).n + 1 } };
    },
    runEffect: async (e, input, key) => {
      calls.push(`effect:${e.effect_id}:${JSON.stringify(input)}:${key}`);
      return ok(200);
    },
    ...over,
  };
  return { r, calls };
}

const resolved = { stfs: [stf(0), stf(1)], effects: [effect(0), effect(1)] };

describe('executeWorkflow', () => {
  it('runs sources, then STFs in order, then effects; answers the last STF output and records each step', async () => {
    const { r, calls } = runners();
    const result = await executeWorkflow(def(), { n: 5, id: 'o-1' }, resolved, r, { runId: 'run-1' });
    expect(result.status).toBe('succeeded');
    expect(result.error).toBeNull();
    expect(result.output).toEqual({ final: 11 });
    expect(calls).toEqual([
      'source:rates',
      'stf:stf-0:{"n":5,"id":"o-1"}',
      'stf:stf-1:{"n":10}',
      'effect:e-0:{"final":11}:run-1:0',
      'effect:e-1:{"id":"o-1"}:run-1:1',
    ]);
    expect(result.steps.map((s) => `${s.kind}[${s.index}]:${s.status}`)).toEqual([
      'input[0]:succeeded',
      'stf[0]:succeeded',
      'stf[1]:succeeded',
      'effect[0]:succeeded',
      'effect[1]:succeeded',
    ]);
    expect(result.steps.find((s) => s.kind === 'effect')).toMatchObject({ status_code: 200, attempts: 1, effect_id: 'e-0' });
  });

  it('reports each step as it ends (steps ended, of all the steps)', async () => {
    const { r } = runners();
    const seen: [number, number][] = [];
    const result = await executeWorkflow(def(), { n: 5, id: 'o-1' }, resolved, r, { runId: 'r', onStepEnd: (done, total) => seen.push([done, total]) });
    expect(result.status).toBe('succeeded');
    expect(seen).toEqual([1, 2, 3, 4, 5].map((n) => [n, 5]));
  });

  it('stop (the waiting caller gone) stops the STF step under way: it fails as cancelled, the rest is skipped, the run ends cancelled', async () => {
    const stop = new AbortController();
    const cancel = new AbortController();
    const given: (AbortSignal | undefined)[] = [];
    const { r, calls } = runners({
      runStf: (s, _input, _sources, signal) => {
        given.push(signal);
        calls.push(`stf:${s.stf_id}`);
        if (s.stf_id === 'stf-0') return Promise.resolve({ ok: true, output: { n: 1 } });
        // The second runs until it is stopped, as a runtime does (StfRunCancelled).
        return new Promise((_, reject) => {
          signal?.addEventListener('abort', () => reject(new Error('The STF run was cancelled')));
          stop.abort();
          cancel.abort();
        });
      },
    });
    const result = await executeWorkflow(def(), { n: 5 }, resolved, r, { runId: 'r', signal: cancel.signal, stop: stop.signal });
    expect(given.every((g) => g === stop.signal)).toBe(true);
    expect(result).toMatchObject({ status: 'cancelled', output: null, error: { step: 'run', kind: 'cancelled' } });
    expect(result.steps.map((s) => `${s.kind}[${s.index}]:${s.status}`)).toEqual([
      'input[0]:succeeded',
      'stf[0]:succeeded',
      'stf[1]:failed',
      'effect[0]:skipped',
      'effect[1]:skipped',
    ]);
    expect(result.steps[2]?.error).toMatchObject({ kind: 'cancelled' });
    expect(calls.filter((c) => c.startsWith('effect'))).toEqual([]);
  });

  it('without STF steps the result is $input', async () => {
    const { r } = runners();
    const result = await executeWorkflow(def({ stf_steps: [], input_steps: [] }), { id: 1 }, { stfs: [], effects: resolved.effects }, r, { runId: 'r' });
    expect(result.output).toEqual({ id: 1 });
  });

  it('a failing source fails the run before any STF', async () => {
    const { r, calls } = runners({
      loadSource: async () => {
        throw Object.assign(new Error('refused: 10.0.0.1 is private'), { kind: 'refused' });
      },
    });
    const result = await executeWorkflow(def(), { n: 1 }, resolved, r, { runId: 'r' });
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ step: 'input_steps[0]', kind: 'refused' });
    expect(calls).toEqual([]);
    expect(result.steps.filter((s) => s.status === 'skipped')).toHaveLength(4);
  });

  it('a failing STF stops the run: later STFs and every effect are skipped', async () => {
    const { r, calls } = runners({
      runStf: async (s) => (s.stf_id === 'stf-0' ? { ok: false, error: { kind: 'runtime', message: 'Error: bad order' } } : { ok: true, output: 1 }),
    });
    const result = await executeWorkflow(def(), { n: 1 }, resolved, r, { runId: 'r' });
    expect(result.error).toEqual({ step: 'stf_steps[0]', kind: 'runtime', message: 'Error: bad order' });
    expect(calls).toEqual(['source:rates']);
    expect(result.steps.map((s) => s.status)).toEqual(['succeeded', 'failed', 'skipped', 'skipped', 'skipped']);
  });

  it('an STF whose version is gone fails its step', async () => {
    const { r } = runners();
    const result = await executeWorkflow(def(), { n: 1 }, { stfs: [stf(0), undefined], effects: resolved.effects }, r, { runId: 'r' });
    expect(result.error).toMatchObject({ step: 'stf_steps[1]', kind: 'not_found' });
  });

  it('effects all run; a 5xx or a transport error in one fails the run and is recorded', async () => {
    const { r, calls } = runners({
      runEffect: async (e) => {
        calls.push(e.effect_id);
        if (e.effect_id === 'e-0') return ok(503);
        throw Object.assign(new Error('timed out after 30000 ms'), { kind: 'timeout', attempts: 3 });
      },
    });
    const result = await executeWorkflow(def(), { n: 1 }, resolved, r, { runId: 'r' });
    expect(result.status).toBe('failed');
    expect(result.output).toEqual({ final: 3 });
    expect(calls.filter((c) => c.startsWith('e-'))).toEqual(['e-0', 'e-1']);
    expect(result.error).toMatchObject({ step: 'effect_steps[0]', kind: 'http_status' });
    expect(result.steps.slice(3)).toMatchObject([
      { kind: 'effect', status: 'failed', status_code: 503 },
      { kind: 'effect', status: 'failed', attempts: 3, error: { kind: 'timeout' } },
    ]);
  });
});

describe('executeWorkflow resumed after a crash (issue 29)', () => {
  const key = (index: number, e: ResolvedEffect) => `k-${index}-${e.effect_id}`;

  it('reports what it finished as it goes: the sources, each STF output, each effect delivered', async () => {
    const { r } = runners({ runEffect: async (e) => ok(e.effect_id === 'e-0' ? 201 : 503) });
    const reports: RunProgress[] = [];
    const result = await executeWorkflow(def(), { n: 5, id: 'o-1' }, resolved, r, {
      runId: 'r',
      effectKey: key,
      onProgress: async (p) => void reports.push(structuredClone(p)),
    });
    // After the sources, after each STF step, after each effect.
    expect(reports).toHaveLength(5);
    expect(reports[0]).toEqual({ input: { records: [expect.objectContaining({ name: 'rates', status: 'succeeded' })], sources: { rates: { eur: 2 } } }, stf: [], effects: [] });
    expect(reports[2]?.stf.map((s) => s.output)).toEqual([{ n: 10 }, { final: 11 }]);
    // Only the effect answered 2xx counts as delivered; both records carry their key.
    expect(reports[4]?.effects).toEqual([expect.objectContaining({ index: 0, delivered: true, idempotency_key: 'k-0-e-0', status_code: 201 })]);
    expect(result.steps.slice(3)).toMatchObject([
      { kind: 'effect', index: 0, status: 'succeeded', delivered: true, idempotency_key: 'k-0-e-0' },
      { kind: 'effect', index: 1, status: 'failed', delivered: false, idempotency_key: 'k-1-e-1', status_code: 503 },
    ]);
    // A first attempt's records say nothing of attempts.
    expect(result.steps.some((s) => 'attempt' in s)).toBe(false);
  });

  it('does not run again what an earlier attempt finished; the effect under way is sent again with its key', async () => {
    // Attempt 1 finished the sources, both STF steps and effect 0, and was cut while effect 1 was under way.
    const first = runners({
      runEffect: async (e, _input, k) => {
        if (e.effect_id === 'e-1') throw new Error('the process died here');
        return { ...ok(200), idempotency_key: k };
      },
    });
    let saved: RunProgress | undefined;
    await executeWorkflow(def(), { n: 5, id: 'o-1' }, resolved, first.r, { runId: 'run-a', effectKey: key, onProgress: async (p) => {
        saved = structuredClone(p);
      },
    });
    expect(saved?.effects.map((e) => e.index)).toEqual([0]);

    const { r, calls } = runners();
    const result = await executeWorkflow(def(), { n: 5, id: 'o-1' }, resolved, r, { runId: 'run-b', effectKey: key, attempt: 2, resume: saved as RunProgress });
    expect(result.status).toBe('succeeded');
    expect(result.output).toEqual({ final: 11 });
    // Only effect 1 ran, with the key of its step (not of this run: run-b).
    expect(calls).toEqual(['effect:e-1:{"id":"o-1"}:k-1-e-1']);
    expect(result.steps.map((s) => `${s.kind}[${s.index}]:${s.status}@${s.attempt}`)).toEqual([
      'input[0]:succeeded@1',
      'stf[0]:succeeded@1',
      'stf[1]:succeeded@1',
      'effect[0]:succeeded@1',
      'effect[1]:succeeded@2',
    ]);
    expect(result.steps[4]).toMatchObject({ delivered: true, idempotency_key: 'k-1-e-1' });
  });

  it('reruns from the first STF step whose version changed, and sends again an effect that was not answered 2xx', async () => {
    const resume: RunProgress = {
      input: { records: [{ kind: 'input', index: 0, name: 'rates', status: 'succeeded' }], sources: { rates: { eur: 3 } } },
      stf: [
        { record: { kind: 'stf', index: 0, stf_version_id: 'v-0', status: 'succeeded' }, output: { n: 15 } },
        { record: { kind: 'stf', index: 1, stf_version_id: 'v-old', status: 'succeeded' }, output: { final: 'stale' } },
      ],
      // Effect 0 was answered 3xx: not delivered, so not in the progress; effect 1 delivered by another effect.
      effects: [{ kind: 'effect', index: 1, effect_id: 'e-other', status: 'succeeded', delivered: true }],
    };
    const { r, calls } = runners();
    const result = await executeWorkflow(def(), { n: 5, id: 'o-1' }, resolved, r, { runId: 'r', effectKey: key, attempt: 3, resume });
    // The recorded sources are reused (eur 3, not the 2 a new load gives); STF 1 runs again at its current version.
    expect(calls).toEqual(['stf:stf-1:{"n":15}', 'effect:e-0:{"final":16}:k-0-e-0', 'effect:e-1:{"id":"o-1"}:k-1-e-1']);
    expect(result.steps.map((s) => s.attempt)).toEqual([1, 1, 3, 3, 3]);
  });

  it('input steps of another definition are loaded again', async () => {
    const resume: RunProgress = { input: { records: [{ kind: 'input', index: 0, name: 'other', status: 'succeeded' }], sources: { other: 1 } }, stf: [], effects: [] };
    const { r, calls } = runners();
    await executeWorkflow(def(), { n: 5, id: 'o-1' }, resolved, r, { runId: 'r', effectKey: key, attempt: 2, resume });
    expect(calls[0]).toBe('source:rates');
    expect(calls).toHaveLength(5);
  });
});
