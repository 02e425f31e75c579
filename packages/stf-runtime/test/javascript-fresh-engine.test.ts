/**
 * Each run starts in a QuickJS runtime and context made for it alone — made ahead, between runs, with only the
 * prelude compiled in it (engine.ts FreshEngine; worker.ts). Nothing of one run reaches the next: not its globals,
 * not what it did to the built-ins, not its input, secrets or caller, whether it succeeded or failed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FreshEngine, runOnEngine, type EngineHost } from '../src/javascript/engine.js';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { compileQuickJS, newBoundedQuickJS } from '../src/javascript/quickjs-module.js';
import { delay, failure, request } from './fixtures/javascript/helpers.js';

let rt: JavascriptRuntime;
beforeAll(() => {
  // One worker: every run below goes to the same worker, one after the other.
  rt = createJavascriptRuntime({ workers: 1 });
});
afterAll(() => rt.close());

/** Waits until the worker has made its next engine, so the next run starts in an engine made ahead. */
async function warm(): Promise<void> {
  for (let i = 0; i < 500 && rt.stats().warm < 1; i++) await delay(10);
  expect(rt.stats().warm).toBe(1);
}

/** What a run sees of its environment: anything an earlier run could have left behind reads as a change here. */
const PROBE = `return {
  leak: typeof globalThis.leak,
  stash: typeof globalThis.__stash,
  protoPolluted: ({}).polluted === undefined ? 'clean' : 'polluted',
  arrayMap: [1, 2].map((x) => x * 2).join(','),
  jsonParse: JSON.parse('{"a":1}').a,
  mathRandomIsNative: String(Math.random).includes('[native code]'),
  input: $input, caller: $caller, env: $env, sources: $sources,
};`;

const pollute = `
globalThis.leak = $env.SECRET;
globalThis.__stash = { input: $input, caller: $caller };
Object.prototype.polluted = $env.SECRET;
Array.prototype.map = function () { return ['hijacked', $env.SECRET]; };
JSON.parse = () => ({ a: $env.SECRET });
Math.random = () => 4;
$env.SECRET = 'changed';
`;

const clean = (input: unknown, caller: string | null, env: Record<string, string>) => ({
  leak: 'undefined',
  stash: 'undefined',
  protoPolluted: 'clean',
  arrayMap: '2,4',
  jsonParse: 1,
  mathRandomIsNative: true,
  input,
  caller,
  env,
  sources: {},
});

describe('javascript runtime: an engine per run, made ahead', () => {
  it('the probe sees such changes when they are there (within one run)', async () => {
    const same = await rt.run(request(`${pollute}\n${PROBE.replace(/^return /, 'const seen = ')}\nreturn seen;`, { secrets: { SECRET: 's' } }));
    expect(same.output).toMatchObject({ leak: 'string', stash: 'object', protoPolluted: 'polluted', arrayMap: 'hijacked,changed', jsonParse: 'changed', mathRandomIsNative: false });
  });

  it("a run that changes its globals and built-ins leaves nothing for the next run of another workspace's user", async () => {
    await warm();
    const a = await rt.run(request(`${pollute}\nreturn 'a done';`, { input: { tenant: 'A' }, caller: 'user-a', workspaceId: 'ws-a', secrets: { SECRET: 'a-secret-value' } }));
    expect(a.output).toBe('a done');
    await warm();
    const b = await rt.run(request(PROBE, { input: { tenant: 'B' }, caller: 'user-b', workspaceId: 'ws-b', secrets: { OTHER: 'b' } }));
    expect(b.output).toEqual(clean({ tenant: 'B' }, 'user-b', { OTHER: 'b' }));
    expect(JSON.stringify(b)).not.toContain('a-secret-value');
  });

  it('the module form too, and a run that comes before the next engine is made', async () => {
    await warm();
    await rt.run(request(`${pollute}\nexport default () => 'a';`, { secrets: { SECRET: 'module-secret' } }));
    // No wait: this run may find the worker still making its engine; it gets one of its own either way.
    const b = await rt.run(request(`export default () => { ${PROBE.replace(/^return /, 'return ')} }`, { caller: 'u2' }));
    expect(b.output).toEqual(clean(null, 'u2', {}));
  });

  it('nothing crosses after a run that threw, timed out or ran out of memory', async () => {
    for (const [code, limits, kind] of [
      [`${pollute}\nthrow new Error('boom ' + $env.SECRET);`, {}, 'runtime'],
      [`${pollute}\nwhile (true) {}`, { timeoutMs: 300 }, 'timeout'],
      [`${pollute}\nconst a = []; for (;;) a.push({ i: a.length });`, { memoryBytes: 16 * 1024 * 1024 }, 'memory'],
    ] as const) {
      await warm();
      const e = await failure(rt.run(request(code, { secrets: { SECRET: 'failing-secret' }, limits })));
      expect(e.kind).toBe(kind);
      await warm();
      const next = await rt.run(request(PROBE, { caller: 'after', input: 7 }));
      expect(next.output).toEqual(clean(7, 'after', {}));
    }
  });

  it('the runs above did start in engines made ahead', () => {
    expect(rt.stats().madeAheadRuns).toBeGreaterThan(5);
  });
});

describe('FreshEngine', () => {
  const host: EngineHost = { logRoom: () => 1000, log: () => 1000, sql: () => '[]', loadModule: () => undefined };
  const job = (code: string) => ({
    code,
    boot: JSON.stringify({ input: null, sources: {}, caller: null, env: {} }),
    memoryBytes: 16 * 1024 * 1024,
    maxOutputBytes: 1024 * 1024,
    timeoutMs: 1000,
    interruptAt: Date.now() + 1000,
  });

  it('holds only the compiled prelude: no globals of a run before its run', async () => {
    const mod = await newBoundedQuickJS(64 * 1024 * 1024, compileQuickJS());
    const engine = FreshEngine.create(mod);
    const r = runOnEngine(engine, job("return [typeof $input, typeof sql, typeof console, typeof $env, Object.keys(globalThis).join(',')]"), host);
    // The run's own prelude call defines them (non-enumerable); nothing else was there.
    expect(r.outcome).toEqual({ ok: true, output: JSON.stringify(['object', 'function', 'object', 'object', '']) });
    expect(r.dispose()).toBe(true);
  });

  it('runs one STF only: a second run on the same engine is refused', async () => {
    const mod = await newBoundedQuickJS(64 * 1024 * 1024, compileQuickJS());
    const engine = FreshEngine.create(mod);
    const first = runOnEngine(engine, job('globalThis.x = 1; return 1'), host);
    expect(first.outcome).toEqual({ ok: true, output: '1' });
    expect(() => runOnEngine(engine, job('return typeof x'), host)).toThrow('one STF only');
    expect(first.dispose()).toBe(true);
    const unused = FreshEngine.create(mod);
    expect(unused.dispose()).toBe(true);
    expect(() => unused.take()).toThrow('one STF only');
  });
});
