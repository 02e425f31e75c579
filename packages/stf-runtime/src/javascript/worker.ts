/**
 * Entry of a JavaScript STF worker thread (started by pool.ts). It owns one sync QuickJS WASM module, runs one job
 * at a time, and replaces the module when a run poisoned it.
 *
 * `sql()` is synchronous for the guest: the worker posts the query to the main thread, then blocks in
 * Atomics.wait on a shared counter; the main thread posts the answer on a dedicated MessagePort and bumps the
 * counter. The worker reads that port with receiveMessageOnPort, so answers of any size need no shared buffer.
 *
 * Between runs the worker makes the next run's engine (a fresh QuickJS runtime and context with the prelude
 * compiled: engine.ts FreshEngine) and says so in shared memory (signal[SIGNAL_WARM], read by the pool when it picks
 * a worker; no message), and disposes the last run's engine only after posting its result: about 0.7 ms of the
 * 0.9 ms a run took in QuickJS is off the run's path. An engine serves one run only.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import type { LogLine } from '../types.js';
import { type EngineHost, FreshEngine, type FinishedRun, poisonModule, runInEngine, runOnEngine, SqlDeadlineError } from './engine.js';
import { LibraryStore } from './libraries.js';
import { createMasker, LogCollector } from './mask.js';
import { type FromWorker, type RunJob, type RunOutcome, SIGNAL_CANCEL, SIGNAL_SQL, SIGNAL_WARM, type SqlAnswer, type ToWorker, type WorkerInit } from './protocol.js';
import { heapBytes, heapLimitFor, heapMaximumFor, newBoundedQuickJS } from './quickjs-module.js';

const port = parentPort;
if (!port) throw new Error('worker.ts must run in a worker thread');
const init = workerData as WorkerInit;
const signal = new Int32Array(init.signal);
/** The libraries, read from dist/libraries/ when a run first imports one, then kept for this worker's later runs. */
const libraries = new LibraryStore(init.libraries);

/** The QuickJS module, and the memory limit its heap's maximum was made for. */
let moduleFor = init.memoryBytes;
let module: Promise<QuickJSWASMModule> = newModule(moduleFor);
let sqlSeq = 0;
/** The next run's engine, made between runs; of the current module only (dropped with it). */
let next: FreshEngine | undefined;

function post(msg: FromWorker): void {
  port!.postMessage(msg);
}

function newModule(memoryBytes: number): Promise<QuickJSWASMModule> {
  moduleFor = memoryBytes;
  return newBoundedQuickJS(heapMaximumFor(memoryBytes), init.quickjs);
}

module.then(
  (mod) => {
    // A module the warm-up broke is being replaced; its successor makes its own engine.
    if (warmUp(mod)) prepare(mod);
    post({ type: 'ready' });
  },
  (e: unknown) => post({ type: 'fatal', message: e instanceof Error ? e.message : String(e) }),
);

/**
 * V8 compiles the QuickJS WASM code lazily and tiers it up: the first run takes ~70 ms, and runs settle near 2 ms
 * after about a dozen. Doing those runs before the worker reports ready keeps them off the first STFs.
 */
function warmUp(mod: QuickJSWASMModule): boolean {
  const host: EngineHost = { logRoom: () => 1000, log: () => 1000, sql: () => '[{"id":1}]', loadModule: () => undefined };
  const codes = [
    'console.log("warm", { a: [1, 2] });\nconst rows = sql("select 1");\nreturn { n: $input.n * 2, rows };',
    'export default async (input, ctx) => ({ n: input.n + 1, caller: ctx.caller });',
    'function f() { throw new Error("warm-up"); }\nf();',
  ];
  const until = Date.now() + 500;
  for (let i = 0; i < 15 && Date.now() < until; i++) {
    const job = {
      code: codes[i % codes.length]!,
      boot: '{"input":{"n":1},"sources":{},"caller":null,"env":{}}',
      memoryBytes: 16 * 1024 * 1024,
      maxOutputBytes: 1024 * 1024,
      timeoutMs: 1000,
      interruptAt: Date.now() + 1000,
    };
    if (runInEngine(mod, job, host).poisoned) {
      replaceModule(moduleFor);
      return false;
    }
  }
  return true;
}

port.on('message', (msg: ToWorker) => {
  void handle(msg);
});

async function handle(msg: ToWorker): Promise<void> {
  let mod = await module;
  if (msg.type === 'poison') {
    const poisoned = poisonModule(mod);
    if (poisoned) replaceModule(moduleFor);
    post({ type: 'poisoned', engineReset: poisoned });
    return;
  }
  // The heap's maximum follows the run's memory limit; and WASM memory never shrinks, so a heap left large by an
  // earlier run would hide this run's use of memory.
  const heapLimit = heapLimitFor(msg.memoryBytes);
  if (moduleFor !== msg.memoryBytes || heapBytes(mod) > heapLimit) {
    replaceModule(msg.memoryBytes);
    mod = await module;
  }
  const result = run(mod, msg, heapLimit);
  let { outcome } = result;
  // An engine failure with the heap at its limit is the guest's memory (an allocation of the host's side failed).
  if (!outcome.ok && 'internal' in outcome && heapBytes(mod) > heapLimit) {
    outcome = { ok: false, kind: 'memory', message: `The STF used more memory than its limit (${msg.memoryBytes} bytes)` } satisfies RunOutcome;
  }
  post({ type: 'result', runId: msg.runId, outcome, engineReset: result.poisoned, heapBytes: heapBytes(mod), madeAhead: result.madeAhead });
  // Off the run's path: the run's engine goes, the next run's is made.
  const clean = result.dispose();
  if (result.poisoned) {
    replaceModule(moduleFor);
  } else if (!clean) {
    replaceModule(moduleFor);
    post({ type: 'engine-reset' });
  } else {
    prepareSoon(mod);
  }
}

/**
 * Makes the next engine a moment after a run's result is posted rather than at once: on a machine with few cores
 * the main thread needs one then to send the answer, and making an engine takes most of a millisecond of CPU. A
 * run that comes before then makes its own.
 */
const PREPARE_DELAY_MS = 1;
function prepareSoon(mod: QuickJSWASMModule): void {
  setTimeout(() => {
    void module.then((current) => {
      if (current === mod) prepare(mod);
    });
  }, PREPARE_DELAY_MS);
}

/** Makes the next run's engine (unless one is ready), and shows the pool this worker is warm. */
function prepare(mod: QuickJSWASMModule): void {
  if (next && !next.used && next.mod === mod) return;
  try {
    next = FreshEngine.create(mod);
    Atomics.store(signal, SIGNAL_WARM, 1);
  } catch {
    next = undefined;
    replaceModule(moduleFor);
    post({ type: 'engine-reset' });
  }
}

/** The engine made ahead for `mod`, or one made now. */
function takeEngine(mod: QuickJSWASMModule): { engine: FreshEngine; madeAhead: boolean } {
  const engine = next;
  next = undefined;
  Atomics.store(signal, SIGNAL_WARM, 0);
  if (engine && !engine.used && engine.mod === mod) return { engine, madeAhead: true };
  return { engine: FreshEngine.create(mod), madeAhead: false };
}

function replaceModule(memoryBytes: number): void {
  // The engine made ahead belongs to the module being dropped.
  Atomics.store(signal, SIGNAL_WARM, 0);
  if (next && !next.used) next.dispose();
  next = undefined;
  module = newModule(memoryBytes);
  // If even a fresh module cannot load, the worker is useless: exit so the pool replaces it.
  module.then(prepare, () => process.exit(1));
}

function run(mod: QuickJSWASMModule, job: RunJob, heapLimit: number): FinishedRun & { madeAhead: boolean } {
  const logs = new LogCollector(
    job.maxLogBytes,
    createMasker(job.secrets),
    (line: LogLine) => post({ type: 'log', runId: job.runId, level: line.level, message: line.message }),
    job.secrets,
  );
  const host: EngineHost = {
    logRoom: () => logs.room(),
    log: (level, message, cut) => logs.push(level, message, cut),
    sql: (query) => {
      if (!job.hasSql) throw new Error('sql is not available here');
      const answer = callSql(job, query);
      if (!answer.ok) throw new Error(answer.message);
      return answer.json;
    },
    resolveModule: (name) => libraries.resolve(name),
    loadModule: (name) => libraries.load(name),
    heapBytes: () => heapBytes(mod),
  };
  let taken: ReturnType<typeof takeEngine>;
  try {
    taken = takeEngine(mod);
  } catch (e) {
    const outcome: RunOutcome = { ok: false, internal: `QuickJS engine failure: ${e instanceof Error ? e.message : String(e)}` };
    return { outcome, poisoned: true, dispose: () => true, madeAhead: false };
  }
  const finished = runOnEngine(
    taken.engine,
    {
      code: job.code,
      boot: job.boot,
      memoryBytes: job.memoryBytes,
      maxOutputBytes: job.maxOutputBytes,
      timeoutMs: job.timeoutMs,
      interruptAt: job.interruptAt,
      cancelled: () => isCancelled(job),
      heapLimitBytes: heapLimit,
    },
    host,
  );
  return { ...finished, madeAhead: taken.madeAhead };
}

/** Whether the main thread cancelled this run (its caller went away): the guest is interrupted as at its deadline. */
const isCancelled = (job: RunJob): boolean => Atomics.load(signal, SIGNAL_CANCEL) === job.runId;

/** Posts the query and blocks until the main thread's answer arrives, the run's deadline passes or it is cancelled. */
function callSql(job: RunJob, query: string): SqlAnswer {
  const seq = ++sqlSeq;
  let seen = Atomics.load(signal, SIGNAL_SQL);
  post({ type: 'sql', runId: job.runId, seq, query });
  for (;;) {
    // Drain first: an answer posted before we wait has already bumped the counter past `seen`.
    for (let m = receiveMessageOnPort(init.answers); m; m = receiveMessageOnPort(init.answers)) {
      const answer = m.message as SqlAnswer;
      if (answer.seq === seq) return answer; // older answers belong to calls that gave up
    }
    const remaining = job.interruptAt - Date.now();
    if (remaining <= 0 || isCancelled(job)) throw new SqlDeadlineError();
    Atomics.wait(signal, SIGNAL_SQL, seen, remaining);
    seen = Atomics.load(signal, SIGNAL_SQL);
  }
}
