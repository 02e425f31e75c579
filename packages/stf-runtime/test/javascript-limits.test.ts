import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { StfError } from '../src/types.js';
import { delay, failure, request } from './fixtures/javascript/helpers.js';

const MiB = 1024 * 1024;

describe('javascript runtime: limits', () => {
  let rt: JavascriptRuntime;
  beforeAll(async () => {
    rt = createJavascriptRuntime({ workers: 2 });
    // Wait until both workers are started and warmed up, so the timings below are the runs' own.
    await Promise.all([rt.run(request('return 1')), rt.run(request('return 1'))]);
  });
  afterAll(() => rt.close());

  it('interrupts a tight loop at timeoutMs and keeps the worker', async () => {
    const before = rt.stats().workerRestarts;
    const started = Date.now();
    const e = await failure(rt.run(request('console.log("started");\nwhile (true) {}', { limits: { timeoutMs: 400 } })));
    const took = Date.now() - started;
    expect(e).toBeInstanceOf(StfError);
    expect([e.kind, e.message]).toEqual(['timeout', 'The STF ran longer than 400 ms']);
    expect(e.logs).toEqual([{ level: 'log', message: 'started' }]);
    expect(took).toBeGreaterThanOrEqual(300);
    expect(rt.stats().workerRestarts).toBe(before); // the interrupt handler ended it, no terminate() needed
  });

  it('an interrupt cannot be caught by the guest', async () => {
    const code = 'let n = 0;\nfor (;;) { try { while (true) {} } catch (e) { n++; } }';
    expect((await failure(rt.run(request(code, { limits: { timeoutMs: 300 } })))).kind).toBe('timeout');
  });

  it('terminates a worker stuck in garbage collection at timeoutMs, and the pool recovers', async () => {
    const before = rt.stats().workerRestarts;
    // Near the memory limit each allocation runs a full GC; QuickJS never checks the interrupt handler there
    // (measured: a 1 s deadline ran 18–30 s), so only the main thread's terminate() ends it.
    const code = 'console.log("gc");\nlet s;\nwhile (true) { s = "x".repeat(1 << 20); }';
    const e = await failure(rt.run(request(code, { limits: { timeoutMs: 600, memoryBytes: 8 * MiB } })));
    // Stopped by the main thread at its own 600 ms limit (the worker terminated), not by the GC finishing.
    expect([e.kind, e.message, e.details]).toEqual(['timeout', 'The STF ran longer than 600 ms', 'the worker was stopped']);
    expect(e.logs).toEqual([{ level: 'log', message: 'gc' }]);
    expect(rt.stats().workerRestarts).toBe(before + 1);
    const ok = await rt.run(request('return $input + 1', { input: 1 }));
    expect(ok.output).toBe(2);
    expect(rt.stats().workers).toBeLessThanOrEqual(2);
  });

  it('times out an SQL call that never answers, without killing the worker', async () => {
    const before = rt.stats().workerRestarts;
    const e = await failure(rt.run(request('sql("select pg_sleep(100)")', { sql: () => new Promise(() => {}), limits: { timeoutMs: 300 } })));
    expect(e.kind).toBe('timeout');
    expect(rt.stats().workerRestarts).toBe(before);
    // The guest cannot escape the timeout by catching the error of that call either.
    const caught = 'try { sql("select 1"); } catch (e) {}\nreturn "escaped";';
    const e2 = await failure(rt.run(request(caught, { sql: () => new Promise(() => {}), limits: { timeoutMs: 300 } })));
    expect(e2.kind).toBe('timeout');
  });

  it('fails with kind memory above memoryBytes, and the next run works', async () => {
    const e = await failure(rt.run(request('const a = [];\nfor (;;) a.push({ i: a.length });', { limits: { memoryBytes: 16 * MiB } })));
    expect(e.kind).toBe('memory');
    expect(e.message).toContain(String(16 * MiB));
    const big = await failure(rt.run(request('return "x".repeat(64 * 1024 * 1024).length', { limits: { memoryBytes: 16 * MiB } })));
    expect(big.kind).toBe('memory');
    expect((await rt.run(request('return [1, 2, 3].length'))).output).toBe(3);
  });

  it('counts many small objects against memoryBytes (QuickJS alone would count 8 bytes per allocation)', async () => {
    // 400k objects are about 40 MiB of WASM heap, but only ~6 MiB by QuickJS's own accounting in this build.
    const code = 'const a = [];\nfor (let i = 0; i < 400000; i++) a.push({ i });\nreturn a.length;';
    expect((await failure(rt.run(request(code, { limits: { memoryBytes: 16 * MiB } })))).kind).toBe('memory');
    expect((await rt.run(request(code, { limits: { memoryBytes: 64 * MiB } }))).output).toBe(400000);
  });

  it('fails with kind stack on runaway recursion, and the next run works', async () => {
    const e = await failure(rt.run(request('function f(n) { return f(n + 1) + 1; }\nreturn f(0);')));
    expect(e.kind).toBe('stack');
    expect(e.details).toMatch(/at f \(stf\.js:1:\d+\)/);
    expect(e.details!.split('\n').length).toBeLessThan(40);
    // Moderate recursion is fine within the 256 KiB stack.
    expect((await rt.run(request('function f(n) { return n === 0 ? 0 : f(n - 1) + 1; }\nreturn f(500);'))).output).toBe(500);
  });

  it('fails with kind output_too_large when the JSON output exceeds maxOutputBytes', async () => {
    const e = await failure(rt.run(request('return "x".repeat(2000);', { limits: { maxOutputBytes: 1000 } })));
    expect(e.kind).toBe('output_too_large');
    expect(e.message).toContain('1000');
    expect((await rt.run(request('return "x".repeat(900);', { limits: { maxOutputBytes: 1000 } }))).output).toHaveLength(900);
  });

  it('caps logs at maxLogBytes and then says they were truncated', async () => {
    const code = 'for (let i = 0; i < 1000; i++) console.log("line " + i);\nreturn "done";';
    const r = await rt.run(request(code, { limits: { maxLogBytes: 100 } }));
    expect(r.output).toBe('done');
    const last = r.logs[r.logs.length - 1]!;
    expect(last.message).toMatch(/logs truncated/);
    const kept = r.logs.slice(0, -1);
    expect(kept[0]!.message).toBe('line 0');
    expect(kept.reduce((n, l) => n + Buffer.byteLength(l.message), 0)).toBeLessThanOrEqual(100);
  });
});

describe('javascript runtime: pool', () => {
  let rt: JavascriptRuntime;
  afterAll(() => rt?.close());

  it('replaces a poisoned QuickJS module and keeps running', async () => {
    rt = createJavascriptRuntime({ workers: 1 });
    expect((await rt.run(request('return 1'))).output).toBe(1);
    await rt.poisonEngineForTests();
    expect(rt.stats().engineResets).toBe(1);
    expect((await rt.run(request('return 2'))).output).toBe(2);
    expect((await rt.run(request('export default () => 3'))).output).toBe(3);
    expect(rt.stats().workerRestarts).toBe(0);
    await rt.close();
  });

  it('runs several STFs at once on two workers, queueing the rest', async () => {
    rt = createJavascriptRuntime({ workers: 2 });
    let active = 0;
    let peak = 0;
    const slowSql = async () => {
      active++;
      peak = Math.max(peak, active);
      await delay(100);
      active--;
      return [{ ok: true }];
    };
    const started = Date.now();
    const runs = Array.from({ length: 6 }, (_, i) =>
      rt.run(request('const rows = sql("select");\nreturn { i: $input, ok: rows[0].ok };', { input: i, sql: slowSql })),
    );
    expect(rt.stats().queued + rt.stats().busy).toBeGreaterThan(0);
    const results = await Promise.all(runs);
    expect(results.map((r) => r.output)).toEqual([0, 1, 2, 3, 4, 5].map((i) => ({ i, ok: true })));
    expect(peak).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300); // three rounds of two
    expect(rt.stats()).toMatchObject({ workers: 2, busy: 0, queued: 0 });
  });

  it('keeps other runs going while one worker is terminated', async () => {
    const stuck = rt.run(
      request('let s;\nwhile (true) { s = "x".repeat(1 << 20); }', { limits: { timeoutMs: 500, memoryBytes: 8 * MiB } }),
    );
    const others = Array.from({ length: 4 }, (_, i) => rt.run(request('return $input * 10', { input: i })));
    expect((await Promise.all(others)).map((r) => r.output)).toEqual([0, 10, 20, 30]);
    expect((await failure(stuck)).kind).toBe('timeout');
    expect((await rt.run(request('return "after"'))).output).toBe('after');
  });

  it('rejects runs after close()', async () => {
    await rt.close();
    await expect(rt.run(request('return 1'))).rejects.toThrow(/closed/);
  });
});
