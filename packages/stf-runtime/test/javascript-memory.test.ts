/**
 * The memory limit protects the host: four memory bombs at once (two workers) of each shape fail cleanly, a normal
 * run afterwards works, and this process's resident memory grows by less than the bound of docs/stfs.md.
 *
 * The bound is a size, not a time: each worker's QuickJS heap has a hard maximum (heapMaximumFor: the 64 MiB limit
 * + 16 MiB slack + 8 MiB headroom = 88 MiB); a worker whose heap grew is replaced after its run, so for a moment
 * the old and the new heap may both exist; and 200 MiB covers the workers' V8 heaps, the output and log copies and
 * the allocator's slack. Before the fix a single bomb grew the process by 2 GiB (the QuickJS build's maximum).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { heapMaximumFor } from '../src/javascript/quickjs-module.js';
import { DEFAULT_LIMITS } from '../src/types.js';
import { failure, request } from './fixtures/javascript/helpers.js';

const MiB = 1024 * 1024;
const WORKERS = 2;
const BOUND = WORKERS * 2 * heapMaximumFor(DEFAULT_LIMITS.memoryBytes) + 200 * MiB;

/** Bombs that must end with the memory error. */
const BOMBS: Record<string, string> = {
  'string doubling': 'let s = "x"; const keep = []; for (;;) { s = s + s; keep.push(s.slice(1)); }',
  'many large strings': 'const keep = []; for (;;) keep.push("x".repeat(8 * 1024 * 1024) + keep.length);',
  'arrays of objects': 'const a = []; for (;;) a.push({ i: a.length, s: "y" + a.length });',
  'typed arrays': 'const keep = []; for (;;) keep.push(new Float64Array(1024 * 1024));',
  ArrayBuffers: 'const keep = []; for (;;) keep.push(new ArrayBuffer(16 * 1024 * 1024));',
  'huge JSON.stringify output':
    'const a = []; for (let i = 0; i < 2e5; i++) a.push({ k: "v".repeat(100), i });\nlet s = "";\nfor (;;) s += JSON.stringify(a);',
  'huge return value': 'return "r".repeat(48 * 1024 * 1024);',
};

let rt: JavascriptRuntime;
let baseline = 0;
let peak = 0;
let sampler: NodeJS.Timeout;

beforeAll(async () => {
  rt = createJavascriptRuntime({ workers: WORKERS });
  await Promise.all([rt.run(request('return 1')), rt.run(request('return 1'))]);
  baseline = process.memoryUsage().rss;
  peak = baseline;
  // Sampling only records the highest value seen; nothing is timed.
  sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
});

afterAll(async () => {
  clearInterval(sampler);
  await rt.close();
  console.log(
    `javascript memory bombs: rss baseline ${Math.round(baseline / MiB)} MiB, peak ${Math.round(peak / MiB)} MiB ` +
      `(+${Math.round((peak - baseline) / MiB)} MiB; bound +${Math.round(BOUND / MiB)} MiB)`,
  );
});

/**
 * Near its limit a guest spends its time in garbage collection; a generous time limit keeps a busy machine from
 * turning the memory failure into a timeout (what is asserted is the kind of failure, never the time).
 */
const SLOW = { timeoutMs: 60_000 };
const bombs = (code: string) => Promise.all(Array.from({ length: 4 }, () => failure(rt.run(request(code, { limits: SLOW })))));

describe('javascript runtime: memory bombs do not grow the host', { timeout: 240_000 }, () => {
  it.each(Object.entries(BOMBS))('%s: four at once fail with kind memory, then a normal run works', async (_name, code) => {
    for (const e of await bombs(code)) {
      expect(e.kind).toBe('memory');
      expect(e.message).toBe(`The STF used more memory than its limit (${DEFAULT_LIMITS.memoryBytes} bytes)`);
    }
    expect((await rt.run(request('return $input * 2', { input: 21 }))).output).toBe(42);
    expect(process.memoryUsage().rss - baseline).toBeLessThan(BOUND);
  });

  it('deep recursion: four at once fail with kind stack', async () => {
    const code = 'function f(n) { const pad = new Array(100).fill(n); return f(n + 1) + pad.length; }\nreturn f(0);';
    for (const e of await bombs(code)) expect(e.kind).toBe('stack');
    expect((await rt.run(request('return 1'))).output).toBe(1);
  });

  it('huge console.log output: the logs are cut at the cap and the run still succeeds', async () => {
    const code = 'const s = "z".repeat(16 * 1024 * 1024);\nfor (let i = 0; i < 1000; i++) console.log(s, s);\nreturn "logged";';
    const results = await Promise.all(Array.from({ length: 4 }, () => rt.run(request(code, { limits: SLOW }))));
    for (const r of results) {
      expect(r.output).toBe('logged');
      expect(r.logs.at(-1)!.message).toMatch(/logs truncated/);
      expect(r.logs.slice(0, -1).reduce((n, l) => n + Buffer.byteLength(l.message), 0)).toBeLessThanOrEqual(DEFAULT_LIMITS.maxLogBytes);
    }
  });

  it('a log line cut to the room left never ends in part of a secret', async () => {
    const secret = 'S3CRET-VALUE-42';
    // The guest cuts the line inside the eighth copy; masking shrinks the seven before it, so without care the
    // start of the eighth would fall within the kept 100 bytes.
    const code = 'console.log($env.TOKEN.repeat(10) + "tail");\nreturn 1;';
    const r = await rt.run(request(code, { secrets: { TOKEN: secret }, limits: { maxLogBytes: 100 } }));
    expect(r.output).toBe(1);
    const text = r.logs.map((l) => l.message).join('\n');
    for (let n = 3; n <= secret.length; n++) expect(text).not.toContain(secret.slice(0, n));
    expect(r.logs.at(-1)!.message).toMatch(/logs truncated/);
  });

  it('an output far over maxOutputBytes is refused by its length, without being copied out', async () => {
    const e = await failure(rt.run(request('return "o".repeat(20 * 1024 * 1024);')));
    expect(e.kind).toBe('output_too_large');
    expect(e.message).toBe(`The output is at least ${20 * MiB + 2} bytes of JSON; the limit is ${DEFAULT_LIMITS.maxOutputBytes}`);
  });

  it('a huge error message is clipped', async () => {
    const e = await failure(rt.run(request('throw new Error("e".repeat(30 * 1024 * 1024));')));
    expect(e.kind).toBe('runtime');
    expect(e.message.length).toBeLessThan(20_000);
  });

  it('an SQL answer larger than the memory limit is refused before it reaches the worker', async () => {
    const rows = [{ blob: 'b'.repeat(2 * MiB) }];
    const code = 'try { sql("select blob"); return "copied"; } catch (e) { return e.message; }';
    const r = await rt.run(request(code, { sql: async () => rows, limits: { memoryBytes: MiB } }));
    expect(r.output).toMatch(/the result of sql\(\) is \d+ characters of JSON, more than the STF's memory limit/);
  });

  it('the process grew by less than the bound over all of the above', () => {
    expect(peak - baseline).toBeLessThan(BOUND);
  });
});
