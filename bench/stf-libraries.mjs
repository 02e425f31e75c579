// The bundled STF libraries (issue 17): what they cost a run that imports nothing, and what each costs when a run
// imports it. Prints figures and ratios against a baseline measured in the same run; never an assertion.
//
// 1. No import: the runtime as it is (each worker gets the manifest and reads a bundle on first import) against the
//    old way (every bundle's source handed to each worker when it starts: `libraries: bundledLibrarySources()`),
//    one run on each in turn; wall time per run and CPU time per run (process.cpuUsage: all threads of this
//    process), and a runtime's start until its first run is done.
// 2. First import of each library in a fresh worker (read from disk, compile, evaluate) and the steady state (the
//    source kept by the worker; QuickJS compiles it again in each run's fresh context), import only, then a real use.
// 3. Large outputs, where the sandbox's native deflate and base64 (prelude.ts NATIVE_DEFLATE / NATIVE_BASE64) do
//    the work: the full embed of the M+ font with save() and saveAsBase64(), a 20,000-row workbook as base64 and a
//    presentation with images as base64; per run, first and then, on this build and (with STF_BASELINE) the earlier
//    one.
// 4. Memory of the heaviest run (pdf-lib + fontkit + the M+ font, full embed): the QuickJS WASM heap after it.
//
// Run: pnpm --filter @wds/stf-runtime build && node bench/stf-libraries.mjs   (BENCH_RUNS, default 2000;
//      STF_BASELINE=/path/to/old/packages/stf-runtime/dist/index.js adds an earlier build to part 1)
import { bundledLibrarySources, createJavascriptRuntime, DEFAULT_LIMITS } from '@wds/stf-runtime';

const RUNS = Number(process.env.BENCH_RUNS ?? 2000);
const limits = { ...DEFAULT_LIMITS, timeoutMs: 60_000 };
const request = (code, input = null) => ({ code, input, sources: {}, caller: null, secrets: {}, limits });
const NOTHING = 'let t = 0; for (const x of $input.items) t += x; return t;';
const INPUT = { items: Array.from({ length: 20 }, (_, i) => i) };

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;
const now = () => performance.now();
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** Waits until the runtime's worker is up (prewarm starts it; its first run waits for it). */
const ready = (rt) => rt.run(request(NOTHING, INPUT));

// ---- 1. a run that imports nothing

// The runtimes compared: the current one (lazy), the old way of handing libraries to workers (eager: the sources of
// every bundle posted to each worker at its start), and, when STF_BASELINE names the dist/index.js of an earlier
// build of @wds/stf-runtime (e.g. the last commit's, built in a copy), that build as it was.
const eagerSources = bundledLibrarySources();
const eagerBytes = Object.values(eagerSources).reduce((n, s) => n + s.length, 0);
const makers = {
  lazy: () => createJavascriptRuntime({ workers: 1 }),
  eager: () => createJavascriptRuntime({ workers: 1, libraries: eagerSources }),
};
if (process.env.STF_BASELINE) {
  const baseline = await import(process.env.STF_BASELINE);
  makers.baseline = () => baseline.createJavascriptRuntime({ workers: 1 });
}
const names = Object.keys(makers);

// Start: a new runtime until its first run is done (worker start, QuickJS compile and warm-up included).
const start = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < 3; r++) {
  for (const n of names) {
    const t = now();
    const rt = makers[n]();
    await rt.run(request(NOTHING, INPUT));
    start[n].push(now() - t);
    await rt.close();
  }
}

const runtimes = Object.fromEntries(names.map((n) => [n, makers[n]()]));
// Warm-up: V8 tiers the QuickJS WASM up over the first few hundred runs of each worker.
for (const n of names) for (let i = 0; i < 300; i++) await runtimes[n].run(request(NOTHING, INPUT));
// One run on each runtime in turn (the order rotating), so drift and other load fall on all of them alike.
const wall = Object.fromEntries(names.map((n) => [n, []]));
const cpu = Object.fromEntries(names.map((n) => [n, []]));
for (let i = 0; i < RUNS; i++) {
  for (let k = 0; k < names.length; k++) {
    const n = names[(i + k) % names.length];
    const c = cpuMs();
    const t = now();
    await runtimes[n].run(request(NOTHING, INPUT));
    wall[n].push(now() - t);
    cpu[n].push(cpuMs() - c);
  }
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
await Promise.all(names.map((n) => runtimes[n].close()));

console.log(`A run that imports nothing (${RUNS} runs on each runtime, one at a time in turn; one worker each)`);
console.log(`lazy: this build; eager: this build with every bundle's source posted to each worker at start (${(eagerBytes / 1e6).toFixed(1)} MB)`);
if (makers.baseline) console.log(`baseline: ${process.env.STF_BASELINE}`);
console.log('');
for (const n of names) {
  console.log(
    `${n.padEnd(8)} start ${fmt(median(start[n])).padStart(8)}   wall/run median ${fmt(median(wall[n]))}   CPU/run median ${fmt(median(cpu[n]))}, mean ${fmt(mean(cpu[n]))}`,
  );
}
for (const n of names.filter((x) => x !== 'lazy')) {
  console.log(
    `lazy/${n}: start ${(median(start.lazy) / median(start[n])).toFixed(2)}, wall ${(median(wall.lazy) / median(wall[n])).toFixed(2)}, CPU ${(median(cpu.lazy) / median(cpu[n])).toFixed(2)} (mean ${(mean(cpu.lazy) / mean(cpu[n])).toFixed(2)})`,
  );
}

// ---- 2. first import and steady state, per library

const IMPORT_ONLY = (name) =>
  name === 'mplus-1p-regular'
    ? `import b from '@d6e-ai/${name}';\nexport default () => b.length;`
    : `import * as m from '@d6e-ai/${name}';\nexport default () => Object.keys(m).length;`;
const USES = {
  'crypto-js': "import C from '@d6e-ai/crypto-js';\nexport default () => C.SHA256('abc').toString();",
  'date-fns': "import { format, addDays } from 'date-fns';\nexport default () => format(addDays(new Date(0), 3), 'yyyy-MM-dd');",
  docx: "import { Document, Packer, Paragraph, TextRun } from '@d6e-ai/docx';\nexport default async () => (await Packer.toBase64String(new Document({ sections: [{ children: [new Paragraph({ children: [new TextRun('請求書')] })] }] }))).length;",
  xlsx: "import * as XLSX from '@d6e-ai/xlsx';\nexport default () => { const wb = XLSX.utils.book_new(); XLSX.utils.book_append_sheet(wb, XLSX.utils.json_to_sheet([{ a: 1, b: 'x' }]), 'S'); return XLSX.write(wb, { type: 'base64', bookType: 'xlsx' }).length; };",
  pptxgenjs: "import PptxGenJS from '@d6e-ai/pptxgenjs';\nexport default async () => { const p = new PptxGenJS(); p.addSlide().addText('Hello', { x: 1, y: 1 }); return (await p.write({ outputType: 'base64' })).length; };",
  'pdf-lib': "import { PDFDocument, StandardFonts } from '@d6e-ai/pdf-lib';\nexport default async () => { const d = await PDFDocument.create(); const f = await d.embedFont(StandardFonts.Helvetica); d.addPage().drawText('Invoice', { font: f }); return (await d.save()).length; };",
  'pdf-lib + fontkit + M+ font, full embed': "import { PDFDocument } from '@d6e-ai/pdf-lib';\nimport fontkit from '@d6e-ai/fontkit';\nimport font from '@d6e-ai/mplus-1p-regular';\nexport default async () => { const d = await PDFDocument.create(); d.registerFontkit(fontkit); const f = await d.embedFont(font); d.addPage().drawText('請求書', { x: 50, y: 700, size: 24, font: f }); return (await d.save()).length; };",
};
const LIBS = ['pdf-lib', 'date-fns', 'crypto-js', 'docx', 'fontkit', 'pptxgenjs', 'xlsx', 'mplus-1p-regular'];

const FONT_EMBED = [
  "import { PDFDocument } from '@d6e-ai/pdf-lib';",
  "import fontkit from '@d6e-ai/fontkit';",
  "import font from '@d6e-ai/mplus-1p-regular';",
  'const make = async () => { const d = await PDFDocument.create(); d.registerFontkit(fontkit); const f = await d.embedFont(font); d.addPage().drawText("請求書", { x: 50, y: 700, size: 24, font: f }); return d; };',
].join('\n');
/** Runs whose cost is compressing or encoding a large output. */
const LARGE = {
  'pdf-lib + M+ font, full embed, save() (1.0 MB)': `${FONT_EMBED}\nexport default async () => (await (await make()).save()).length;`,
  'pdf-lib + M+ font, full embed, saveAsBase64() (1.4 MB)': `${FONT_EMBED}\nexport default async () => (await (await make()).saveAsBase64()).length;`,
  'xlsx, 20,000 rows, write base64 (4.0 MB)': [
    "import * as XLSX from '@d6e-ai/xlsx';",
    'export default () => {',
    "  const rows = Array.from({ length: 20000 }, (_, i) => ({ id: i, item: '品目 ' + i, qty: i % 7, price: i * 1.5 }));",
    '  const wb = XLSX.utils.book_new();',
    "  XLSX.utils.book_append_sheet(wb, XLSX.utils.json_to_sheet(rows), 'S');",
    "  return XLSX.write(wb, { type: 'base64', bookType: 'xlsx' }).length;",
    '};',
  ].join('\n'),
  'pptxgenjs, 5 slides with a 60 KB image each, write base64 (0.5 MB)': [
    "import PptxGenJS from '@d6e-ai/pptxgenjs';",
    'export default async () => {',
    '  const img = new Uint8Array(60000); let x = 88675123;',
    '  for (let i = 0; i < img.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; img[i] = x; }',
    "  let s = ''; for (let i = 0; i < img.length; i += 8192) s += String.fromCharCode.apply(null, img.subarray(i, i + 8192));",
    "  const data = 'image/png;base64,' + btoa(s);",
    '  const p = new PptxGenJS();',
    '  for (let i = 0; i < 5; i++) p.addSlide().addImage({ data, x: 1, y: 1, w: 1, h: 1 });',
    "  return (await p.write({ outputType: 'base64' })).length;",
    '};',
  ].join('\n'),
};

async function firstAndThen(code, then) {
  const rt = createJavascriptRuntime({ workers: 1 });
  try {
    await ready(rt);
    const t = now();
    await rt.run(request(code));
    const first = now() - t;
    const rest = [];
    for (let i = 0; i < then; i++) {
      const s = now();
      await rt.run(request(code));
      rest.push(now() - s);
    }
    return { first, then: median(rest), recycles: rt.stats().workerRecycles };
  } finally {
    await rt.close();
  }
}

console.log('\nFirst import in a fresh worker, then the median of the next runs (each run: a fresh QuickJS context)\n');
console.log('library            import only: first / then      a real use: first / then');
for (const name of LIBS) {
  const only = await firstAndThen(IMPORT_ONLY(name), 10);
  const use = USES[name] ? await firstAndThen(USES[name], 5) : undefined;
  console.log(
    `${name.padEnd(18)} ${fmt(only.first).padStart(9)} / ${fmt(only.then).padEnd(12)}    ${use ? `${fmt(use.first).padStart(9)} / ${fmt(use.then)}` : '—'}`,
  );
}
const heavyName = 'pdf-lib + fontkit + M+ font, full embed';
const heavy = await firstAndThen(USES[heavyName], 2);
console.log(`${heavyName}: first ${fmt(heavy.first)}, then ${fmt(heavy.then)}; workers retired for a heap past 48 MiB: ${heavy.recycles}`);

// ---- 3. large outputs: the native deflate and base64

/** One run's time and output, or its failure (`kind: message`). */
async function timed(rt, code) {
  const t = now();
  try {
    const r = await rt.run(request(code));
    return { ms: now() - t, output: r.output };
  } catch (e) {
    return { ms: now() - t, failed: `${e.kind ?? 'error'}: ${e.message}` };
  }
}

async function firstAndThenOn(make, code, then) {
  const rt = make();
  try {
    await ready(rt);
    const first = await timed(rt, code);
    const rest = [];
    for (let i = 0; i < then; i++) rest.push(await timed(rt, code));
    const failed = [first, ...rest].find((r) => r.failed)?.failed;
    return { first: first.ms, then: median(rest.map((r) => r.ms)), result: failed ? `FAILED ${failed}` : `output ${first.output}`, engineResets: rt.stats().engineResets };
  } finally {
    await rt.close();
  }
}

const compared = { this: makers.lazy, ...(makers.baseline ? { baseline: makers.baseline } : {}) };
console.log(`\nLarge outputs, first / then (median of 2) per run${makers.baseline ? '; baseline as above' : ''}\n`);
for (const [label, code] of Object.entries(LARGE)) {
  const cells = [];
  for (const [n, make] of Object.entries(compared)) {
    const r = await firstAndThenOn(make, code, 2);
    cells.push(`${n.padEnd(8)} ${fmt(r.first).padStart(8)} / ${fmt(r.then).padStart(8)}  (${r.result}; engine resets ${r.engineResets})`);
  }
  console.log(`${label}\n    ${cells.join('\n    ')}`);
}

// ---- 4. memory of the heaviest run

const { runInEngine } = await import('../packages/stf-runtime/dist/javascript/engine.js');
const { heapBytes, heapMaximumFor, newBoundedQuickJS, compileQuickJS } = await import('../packages/stf-runtime/dist/javascript/quickjs-module.js');
const { LibraryStore, libraryCatalog } = await import('../packages/stf-runtime/dist/javascript/libraries.js');
const mod = await newBoundedQuickJS(heapMaximumFor(DEFAULT_LIMITS.memoryBytes), compileQuickJS());
const store = new LibraryStore({ catalog: libraryCatalog() });
const host = {
  logRoom: () => 1000,
  log: () => 1000,
  sql: () => '[]',
  resolveModule: (n) => store.resolve(n),
  loadModule: (n) => store.load(n),
  heapBytes: () => heapBytes(mod),
};
const before = heapBytes(mod);
const job = {
  code: USES[heavyName],
  boot: '{"input":null,"sources":{},"caller":null,"env":{}}',
  memoryBytes: DEFAULT_LIMITS.memoryBytes,
  maxOutputBytes: DEFAULT_LIMITS.maxOutputBytes,
  timeoutMs: 60_000,
  interruptAt: Date.now() + 60_000,
  heapLimitBytes: DEFAULT_LIMITS.memoryBytes + 16 * 1024 * 1024,
};
const result = runInEngine(mod, job, host);
const MiB = (b) => `${(b / 1024 / 1024).toFixed(1)} MiB`;
console.log(
  `\n${heavyName}, memory: ${result.outcome.ok ? 'ok' : JSON.stringify(result.outcome)}; QuickJS WASM heap ${MiB(before)} → ${MiB(heapBytes(mod))} (run limit ${MiB(DEFAULT_LIMITS.memoryBytes)}, stopped past ${MiB(job.heapLimitBytes)}, hard maximum ${MiB(heapMaximumFor(DEFAULT_LIMITS.memoryBytes))})`,
);
