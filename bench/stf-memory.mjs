// Memory bombs against the javascript STF runtime: for each shape, four runs at once on two workers (the default
// STF_JS_WORKERS) with the default 64 MiB limit, while this process's resident set size is sampled. Prints the
// baseline, the peak and the size after each shape, how the runs ended, and whether a normal run still works.
// A figure, never an assertion (test/javascript-memory.test.ts asserts the bound). Run: node bench/stf-memory.mjs
import { createJavascriptRuntime, DEFAULT_LIMITS } from '@wds/stf-runtime';

const MiB = 1024 * 1024;
const WORKERS = Number(process.env.STF_JS_WORKERS ?? 2);
const SHAPES = {
  'string doubling': 'let s = "x"; const keep = []; for (;;) { s = s + s; keep.push(s.slice(1)); }',
  'many large strings': 'const keep = []; for (;;) keep.push("x".repeat(60 * 1024 * 1024) + keep.length);',
  'arrays of objects': 'const a = []; for (;;) a.push({ i: a.length, s: "y" + a.length });',
  'typed arrays': 'const keep = []; for (;;) keep.push(new Float64Array(1024 * 1024));',
  ArrayBuffers: 'const keep = []; for (;;) keep.push(new ArrayBuffer(32 * 1024 * 1024));',
  'deep recursion': 'function f(n) { const pad = new Array(100).fill(n); return f(n + 1) + pad.length; } return f(0);',
  'huge JSON.stringify': 'const a = []; for (let i = 0; i < 2e5; i++) a.push({ k: "v".repeat(100), i }); let s = ""; for (;;) s += JSON.stringify(a);',
  'huge console.log': 'const s = "z".repeat(16 * 1024 * 1024); for (let i = 0; i < 1000; i++) console.log(s, s); return "logged";',
  'huge return value': 'return "r".repeat(60 * 1024 * 1024);',
};

const rt = createJavascriptRuntime({ workers: WORKERS });
const request = (code) => ({ code, input: null, sources: {}, caller: null, secrets: {}, limits: { ...DEFAULT_LIMITS, timeoutMs: 30_000 } });
await Promise.all(Array.from({ length: WORKERS }, () => rt.run(request('return 1'))));

const rss = () => process.memoryUsage().rss;
const mb = (b) => `${Math.round(b / MiB)}`.padStart(5);
const baseline = rss();
let overall = baseline;
console.log(`javascript runtime, ${WORKERS} workers, memory limit ${DEFAULT_LIMITS.memoryBytes / MiB} MiB, 4 bombs at once per shape`);
console.log(`baseline rss ${mb(baseline)} MiB\n`);
console.log(`${'shape'.padEnd(22)} ${'peak'.padStart(6)} ${'after'.padStart(6)}  outcome of the 4 runs / a normal run after`);
for (const [name, code] of Object.entries(SHAPES)) {
  let peak = rss();
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 5);
  const settled = await Promise.allSettled(Array.from({ length: 4 }, () => rt.run(request(code))));
  clearInterval(sampler);
  peak = Math.max(peak, rss());
  overall = Math.max(overall, peak);
  const outcomes = [...new Set(settled.map((s) => (s.status === 'fulfilled' ? 'success' : (s.reason.kind ?? s.reason.message))))].join(',');
  const after = await rt.run(request('return 40 + 2')).then((r) => r.output, (e) => e.message);
  console.log(`${name.padEnd(22)} ${mb(peak)} ${mb(rss())}  ${outcomes} / ${after}`);
}
console.log(`\npeak rss ${mb(overall)} MiB (+${Math.round((overall - baseline) / MiB)} MiB over the baseline); workers recycled: ${rt.stats().workerRecycles}`);
await rt.close();
