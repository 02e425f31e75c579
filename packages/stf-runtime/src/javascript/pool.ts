/**
 * The JavaScript STF runtime (docs/stfs.md#the-javascript-runtime): a small pool of worker threads, each owning a
 * QuickJS WASM module. The main thread enforces the wall-clock limit: a worker that does not answer within
 * `limits.timeoutMs` is terminated and replaced, so a guest stuck in garbage collection or in native code still ends on
 * time.
 *
 * Runs wait for a worker in a per-workspace fair queue (fair-queue.ts), and the wait counts against their time
 * limit. Memory: each worker's QuickJS heap has a hard maximum near the run's limit (quickjs-module.ts), its V8 heap
 * has `resourceLimits`, nothing large crosses from the guest into the worker (prelude.ts) or from the worker into
 * this thread (outputs and logs are capped, SQL answers larger than the memory limit are refused), and a worker
 * whose heap grew past `recycleHeapBytes` is terminated after its run and replaced, which returns the memory to the
 * system (WASM memory never shrinks). So the process grows by at most about `workers` × (heap maximum + V8 heap
 * limit), whatever the guests do — see docs/stfs.md.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { FairQueue, type FairQueueStats, type Grant } from '../fair-queue.js';
import {
  DEFAULT_LIMITS,
  type LogLine,
  type SqlCallResult,
  StfError,
  StfRunCancelled,
  type StfRunRequest,
  type StfRunResult,
  type StfRuntime,
} from '../types.js';
import { libraryCatalog } from './libraries.js';
import { createMasker } from './mask.js';
import {
  type FromWorker,
  type RunOutcome,
  SIGNAL_CANCEL,
  SIGNAL_ENTRIES,
  SIGNAL_SQL,
  SIGNAL_WARM,
  type SqlAnswer,
  type ToWorker,
  type WorkerInit,
} from './protocol.js';
import { compileQuickJS, INITIAL_HEAP_BYTES } from './quickjs-module.js';

export interface JavascriptRuntimeOptions {
  /** Worker threads in the pool (default 2). Runs beyond that wait for a free worker. */
  workers?: number;
  /**
   * Libraries importable by package name (name → ES module source, also importable as `@d6e-ai/<name>`); defaults
   * to the bundled libraries, which each worker reads from dist/libraries/ when a run first imports one.
   */
  libraries?: Record<string, string>;
  /** Start (and warm up) all workers now rather than on the first runs (default true). */
  prewarm?: boolean;
  /** Runs one workspace may have waiting for a worker; one more is refused with StfRuntimeBusy (default 16). */
  maxQueuedPerWorkspace?: number;
  /** Runs one workspace may have in progress even when nobody else waits (default: all workers). */
  maxRunningPerWorkspace?: number;
  /**
   * A worker whose QuickJS heap is larger than this after a run is terminated and replaced, giving the memory back
   * (default: the initial 16 MiB heap plus half the default memory limit, 48 MiB).
   */
  recycleHeapBytes?: number;
  /**
   * Old-generation limit of each worker's V8 heap in MiB (default 256): what the worker may hold outside QuickJS — the
   * bundled libraries its runs imported (4.3 MB if all), an SQL answer on its way in (at most the run's memory
   * limit), the output on its way out. A worker past it is stopped, and its run fails with kind 'memory'.
   */
  workerHeapMb?: number;
}

export interface JavascriptRuntimeStats {
  workers: number;
  busy: number;
  /** Idle workers whose next run's engine is made. */
  warm: number;
  queued: number;
  /** Workers terminated (hard timeout) or lost (crash) and replaced. */
  workerRestarts: number;
  /** Workers retired after a run grew their heap past `recycleHeapBytes`, and replaced. */
  workerRecycles: number;
  /** QuickJS modules replaced inside a worker after an abort poisoned them. */
  engineResets: number;
  /** Runs that started in an engine their worker made before the run came (off the run's path; worker.ts). */
  madeAheadRuns: number;
  /** Fresh workers starting in place of retired ones; the run that retired each still holds its queue slot. */
  replacing: number;
  /** Runs in progress and waiting, per workspace. */
  queue: FairQueueStats;
}

export interface JavascriptRuntime extends StfRuntime {
  stats(): JavascriptRuntimeStats;
  /** @internal Test hook: aborts the QuickJS module of one idle worker the way a leaked handle would. */
  poisonEngineForTests(): Promise<void>;
}

export function createJavascriptRuntime(opts: JavascriptRuntimeOptions = {}): JavascriptRuntime {
  return new Pool(opts);
}

interface ActiveRun {
  id: number;
  req: StfRunRequest;
  logs: LogLine[];
  /** performance.now() when the worker got it: duration_ms counts from here (the time limit from the request). */
  started: number;
  timer: NodeJS.Timeout;
  /** Its signal aborted: the guest is being interrupted, and the run rejects with StfRunCancelled once it stopped. */
  cancelled: boolean;
  resolve(result: StfRunResult): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  signal: Int32Array;
  answers: MessagePort;
  ready: Promise<void>;
  isReady: boolean;
  failReady(error: Error): void;
  busy: boolean;
  dead: boolean;
  run?: ActiveRun;
  /** The fair queue's slot the worker's current run holds. */
  grant?: Grant;
  onPoisoned?: () => void;
}

const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * How long a cancelled run's worker has to stop at the interrupt before it is terminated and replaced (a guest stuck
 * where QuickJS does not check for interrupts: a long native call, garbage collection).
 */
const CANCEL_GRACE_MS = 250;

class Pool implements JavascriptRuntime {
  private readonly size: number;
  private readonly libraries: WorkerInit['libraries'];
  private readonly workerFile: string;
  private readonly queue: FairQueue;
  private readonly recycleHeapBytes: number;
  private readonly workerHeapMb: number;
  /** The QuickJS WASM compiled once, shared by every worker (undefined: each compiles its own). */
  private readonly quickjs = compileQuickJS();
  private slots: Slot[] = [];
  private closed = false;
  private runSeq = 0;
  private workerRestarts = 0;
  private workerRecycles = 0;
  private engineResets = 0;
  private madeAheadRuns = 0;
  /** Fresh workers starting in place of retired ones, whose queue slot the run that retired them still holds. */
  private replacing = 0;

  constructor(opts: JavascriptRuntimeOptions) {
    this.size = Math.max(1, Math.floor(opts.workers ?? 2));
    // Posted to each worker once, when it starts (workerData): the manifest, not the sources (read on first import).
    this.libraries = opts.libraries ? { sources: { ...opts.libraries } } : { catalog: libraryCatalog() };
    this.workerFile = resolveWorkerFile();
    this.queue = new FairQueue({
      capacity: this.size,
      maxQueuedPerWorkspace: opts.maxQueuedPerWorkspace ?? 16,
      maxRunningPerWorkspace: opts.maxRunningPerWorkspace,
      slotName: 'JavaScript workers',
    });
    this.recycleHeapBytes = opts.recycleHeapBytes ?? INITIAL_HEAP_BYTES + DEFAULT_LIMITS.memoryBytes / 2;
    this.workerHeapMb = opts.workerHeapMb ?? 256;
    if (opts.prewarm ?? true) while (this.slots.length < this.size) this.spawn();
  }

  stats(): JavascriptRuntimeStats {
    const queue = this.queue.stats();
    return {
      workers: this.slots.length,
      busy: this.slots.filter((s) => s.busy).length,
      warm: this.slots.filter((s) => !s.busy && !s.dead && isWarm(s)).length,
      queued: queue.waiting,
      workerRestarts: this.workerRestarts,
      workerRecycles: this.workerRecycles,
      engineResets: this.engineResets,
      madeAheadRuns: this.madeAheadRuns,
      replacing: this.replacing,
      queue,
    };
  }

  async run(req: StfRunRequest): Promise<StfRunResult> {
    const asked = performance.now();
    const { signal } = req;
    if (signal?.aborted) throw new StfRunCancelled();
    const code = decodeCode(req.code);
    const boot = encodeJson(
      { input: req.input ?? null, sources: req.sources ?? {}, caller: req.caller ?? null, env: req.secrets ?? {} },
      'the input and sources must be JSON-serialisable',
    );
    const limits = req.limits;
    const limitMs = Math.max(1, Math.min(limits.timeoutMs, MAX_TIMER_MS));
    const slot = await this.acquire(req.workspaceId, limitMs, req.principalId, signal);
    if (!slot) throw waitedTooLong(limits.timeoutMs, this.size);
    if (signal?.aborted) {
      this.release(slot);
      throw new StfRunCancelled();
    }
    try {
      await slot.ready;
    } catch (e) {
      this.release(slot);
      throw e;
    }
    // What is left of the time limit after waiting for the worker (and for it to start).
    const timeoutMs = Math.floor(limitMs - (performance.now() - asked));
    if (timeoutMs < 1) {
      this.release(slot);
      throw waitedTooLong(limits.timeoutMs, this.size);
    }
    return new Promise<StfRunResult>((resolve, reject) => {
      const run: ActiveRun = {
        id: ++this.runSeq,
        req,
        logs: [],
        started: performance.now(),
        timer: setTimeout(() => this.onTimeout(slot, run), timeoutMs),
        cancelled: false,
        resolve,
        reject,
      };
      slot.run = run;
      if (signal) {
        const onAbort = () => this.onCancel(slot, run);
        signal.addEventListener('abort', onAbort, { once: true });
        const forget = () => signal.removeEventListener('abort', onAbort);
        run.resolve = (result) => {
          forget();
          resolve(result);
        };
        run.reject = (error) => {
          forget();
          reject(error);
        };
      }
      // The guest is interrupted a little before the hard limit, so a well-behaved timeout keeps its worker.
      const margin = Math.min(50, Math.floor(timeoutMs / 10));
      const job: ToWorker = {
        type: 'run',
        runId: run.id,
        code,
        boot,
        memoryBytes: limits.memoryBytes,
        maxOutputBytes: limits.maxOutputBytes,
        maxLogBytes: limits.maxLogBytes,
        timeoutMs: limits.timeoutMs,
        interruptAt: Date.now() + timeoutMs - margin,
        hasSql: typeof req.sql === 'function',
        secrets: Object.values(req.secrets ?? {}),
      };
      slot.worker.postMessage(job);
      // Aborted while its worker was starting: stopped at once (a listener added now would never be called).
      if (signal?.aborted) this.onCancel(slot, run);
      try {
        req.onStart?.();
      } catch {
        // the caller's concern; the run goes on
      }
    });
  }

  async poisonEngineForTests(): Promise<void> {
    const slot = await this.acquire(null, MAX_TIMER_MS);
    if (!slot) throw new Error('no worker became free');
    try {
      await slot.ready;
      await new Promise<void>((resolve) => {
        slot.onPoisoned = resolve;
        slot.worker.postMessage({ type: 'poison' } satisfies ToWorker);
      });
    } finally {
      slot.onPoisoned = undefined;
      this.release(slot);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const error = new Error('the JavaScript runtime is closed');
    this.queue.close(error);
    const slots = this.slots.splice(0);
    await Promise.all(
      slots.map(async (slot) => {
        slot.dead = true;
        slot.failReady(error);
        const run = slot.run;
        if (run) this.finish(slot, run, () => run.reject(error));
        await slot.worker.terminate().catch(() => undefined);
      }),
    );
  }

  // ---- the pool

  /**
   * A worker for a run of `workspaceId`, after its turn in the fair queue; false when `maxWaitMs` passed first.
   * The queue hands out at most `size` grants, so a granted run always finds an idle worker or room for one.
   */
  private async acquire(
    workspaceId: string | null | undefined,
    maxWaitMs: number,
    principalId?: string | null,
    signal?: AbortSignal,
  ): Promise<Slot | false> {
    if (this.closed) throw new Error('the JavaScript runtime is closed');
    const grant = await this.queue.acquire(workspaceId, maxWaitMs, principalId, signal);
    if (!grant) return false;
    if (this.closed) {
      grant.release();
      throw new Error('the JavaScript runtime is closed');
    }
    // A warm worker first: another may still be making its next engine after its last run.
    const slot = this.slots.find((s) => !s.busy && !s.dead && isWarm(s)) ?? this.slots.find((s) => !s.busy && !s.dead) ?? this.spawn();
    slot.grant = grant;
    return this.markBusy(slot);
  }

  /** A busy worker keeps the process alive (it may be starting, or blocked waiting for an SQL answer). */
  private markBusy(slot: Slot): Slot {
    slot.busy = true;
    slot.worker.ref();
    return slot;
  }

  /** Ends the worker's turn: its queue slot goes to the next run (which takes an idle or fresh worker). */
  private release(slot: Slot): void {
    slot.run = undefined;
    slot.busy = false;
    slot.worker.unref();
    const grant = slot.grant;
    slot.grant = undefined;
    grant?.release();
  }

  private spawn(): Slot {
    const signal = new Int32Array(new SharedArrayBuffer(4 * SIGNAL_ENTRIES));
    const { port1, port2 } = new MessageChannel();
    port1.unref();
    const init: WorkerInit = {
      signal: signal.buffer as SharedArrayBuffer,
      answers: port2,
      libraries: this.libraries,
      memoryBytes: DEFAULT_LIMITS.memoryBytes,
      ...(this.quickjs ? { quickjs: this.quickjs } : {}),
    };
    const worker = new Worker(this.workerFile, {
      workerData: init,
      transferList: [port2],
      resourceLimits: { maxOldGenerationSizeMb: this.workerHeapMb, maxYoungGenerationSizeMb: 16 },
    });
    worker.unref(); // an idle pool does not keep the process alive; a running STF's timer does
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    ready.catch(() => undefined); // observed by the run that awaits it
    const slot: Slot = {
      worker,
      signal,
      answers: port1,
      ready,
      isReady: false,
      failReady: readyReject,
      busy: false,
      dead: false,
    };
    worker.on('message', (msg: FromWorker) => {
      switch (msg.type) {
        case 'ready':
          slot.isReady = true;
          readyResolve();
          break;
        case 'engine-reset':
          this.engineResets++;
          break;
        case 'fatal':
          this.onCrash(slot, new Error(`the JavaScript worker could not load QuickJS: ${msg.message}`));
          break;
        case 'log':
          if (slot.run?.id === msg.runId) slot.run.logs.push({ level: msg.level, message: msg.message });
          break;
        case 'sql':
          this.onSql(slot, msg.runId, msg.seq, msg.query);
          break;
        case 'result':
          if (msg.engineReset) this.engineResets++;
          if (msg.madeAhead) this.madeAheadRuns++;
          this.onResult(slot, msg.runId, msg.outcome, msg.heapBytes);
          break;
        case 'poisoned':
          if (msg.engineReset) this.engineResets++;
          slot.onPoisoned?.();
          break;
      }
    });
    worker.on('error', (e) => this.onCrash(slot, e));
    worker.on('exit', (code) => this.onCrash(slot, new Error(`the JavaScript worker exited (code ${code})`)));
    this.slots.push(slot);
    return slot;
  }

  /**
   * Removes a dead slot and starts a fresh worker in its place (unless it never started: the next run tries again
   * rather than a loop of workers that cannot start). The run that cost the worker keeps its queue slot until the
   * fresh worker is ready: its workspace's (and principal's) next run waits for the replacement it caused, while
   * other workspaces' runs take the workers that are warm. Otherwise a run that exhausts its memory or time again
   * and again would keep every worker busy — one running its next run, one starting up — and others' runs would
   * wait for the start-ups it caused.
   */
  private replace(slot: Slot): void {
    slot.dead = true;
    this.slots = this.slots.filter((s) => s !== slot);
    const grant = slot.grant;
    slot.grant = undefined;
    this.release(slot);
    if (this.closed || !slot.isReady || !grant) {
      grant?.release();
      return;
    }
    const fresh = this.spawn();
    this.replacing++;
    const done = () => {
      this.replacing--;
      grant.release();
    };
    fresh.ready.then(done, done);
  }

  // ---- events of a run

  private finish(slot: Slot, run: ActiveRun, settle: () => void): void {
    if (slot.run !== run) return;
    clearTimeout(run.timer);
    settle();
    slot.run = undefined;
  }

  private onResult(slot: Slot, runId: number, outcome: RunOutcome, heapBytes: number): void {
    const run = slot.run;
    if (!run || run.id !== runId) return;
    const duration_ms = elapsed(run);
    // A heap that grew stays grown (WASM memory never shrinks): retire the worker, which frees it all. After a
    // memory failure too, since an allocation of the host's side may have failed inside the heap.
    const retire = heapBytes > this.recycleHeapBytes || (!outcome.ok && 'kind' in outcome && outcome.kind === 'memory');
    this.finish(slot, run, () => {
      if (run.cancelled) {
        run.reject(new StfRunCancelled());
      } else if (outcome.ok) {
        run.resolve({ output: JSON.parse(outcome.output) as unknown, logs: run.logs, duration_ms });
      } else if ('internal' in outcome) {
        run.reject(new Error(outcome.internal));
      } else {
        const mask = createMasker(Object.values(run.req.secrets ?? {}));
        const details = outcome.details === undefined ? undefined : mask(outcome.details);
        run.reject(new StfError(outcome.kind, mask(outcome.message), details, run.logs));
      }
    });
    if (retire && !slot.dead) {
      this.workerRecycles++;
      void slot.worker.terminate().catch(() => undefined);
      this.replace(slot);
    } else {
      this.release(slot);
    }
  }

  /**
   * The run's caller went away: the guest is interrupted at its next check (and a worker waiting for an SQL answer
   * woken), as at its deadline; the worker's answer then ends the run, which frees its slot for the next. A worker
   * that does not answer within CANCEL_GRACE_MS is terminated and replaced, as at the hard limit.
   */
  private onCancel(slot: Slot, run: ActiveRun): void {
    if (slot.run !== run || run.cancelled) return;
    run.cancelled = true;
    Atomics.store(slot.signal, SIGNAL_CANCEL, run.id);
    Atomics.add(slot.signal, SIGNAL_SQL, 1);
    Atomics.notify(slot.signal, SIGNAL_SQL);
    clearTimeout(run.timer);
    run.timer = setTimeout(() => this.onTimeout(slot, run), CANCEL_GRACE_MS);
  }

  private onTimeout(slot: Slot, run: ActiveRun): void {
    if (slot.run !== run) return;
    this.finish(slot, run, () =>
      run.reject(
        run.cancelled
          ? new StfRunCancelled()
          : new StfError('timeout', `The STF ran longer than ${run.req.limits.timeoutMs} ms`, 'the worker was stopped', run.logs),
      ),
    );
    this.workerRestarts++;
    slot.dead = true;
    void slot.worker.terminate().catch(() => undefined);
    this.replace(slot);
  }

  private onCrash(slot: Slot, error: Error): void {
    if (slot.dead) return;
    slot.failReady(error);
    const run = slot.run;
    if (run) {
      // The worker's V8 heap reached its resourceLimits: the run's doing (an SQL answer, logs, output too large).
      const outOfMemory = (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.finish(slot, run, () =>
        run.reject(
          outOfMemory
            ? new StfError('memory', `The STF used more memory than its limit (${run.req.limits.memoryBytes} bytes)`, 'the worker ran out of heap', run.logs)
            : new Error(`the JavaScript worker failed: ${error.message}`),
        ),
      );
    }
    if (slot.isReady) this.workerRestarts++;
    void slot.worker.terminate().catch(() => undefined);
    this.replace(slot);
  }

  private onSql(slot: Slot, runId: number, seq: number, query: string): void {
    const run = slot.run;
    if (!run || run.id !== runId) return;
    const reply = (answer: SqlAnswer) => {
      if (slot.dead || slot.run !== run) return; // the run ended (timeout): nobody waits for this answer
      slot.answers.postMessage(answer);
      Atomics.add(slot.signal, SIGNAL_SQL, 1); // after the post: the worker drains the port once it sees the new count
      Atomics.notify(slot.signal, SIGNAL_SQL);
    };
    const sql = run.req.sql;
    if (!sql) {
      reply({ seq, ok: false, message: 'sql is not available here' });
      return;
    }
    Promise.resolve()
      .then(() => sql(query))
      .then((result: SqlCallResult) => {
        if (typeof result !== 'number' && !Array.isArray(result)) {
          throw new Error('the sql callback returned neither rows nor a count');
        }
        const json = encodeJson(result, 'the sql result is not JSON-serialisable');
        // It could not fit in the guest's memory anyway; refused before it is copied into the worker.
        const limit = run.req.limits.memoryBytes;
        if (json.length > limit) throw new Error(`the result of sql() is ${json.length} characters of JSON, more than the STF's memory limit (${limit} bytes)`);
        reply({ seq, ok: true, json });
      })
      .catch((e: unknown) => reply({ seq, ok: false, message: e instanceof Error ? e.message : String(e) }));
  }
}

/** The worker holds its next run's engine, made ahead (worker.ts sets the flag; a hint for picking a worker). */
const isWarm = (slot: Slot): boolean => slot.isReady && Atomics.load(slot.signal, SIGNAL_WARM) === 1;

/** A run that waited its whole time limit for a worker: it never ran. */
function waitedTooLong(timeoutMs: number, workers: number): StfError {
  return new StfError(
    'timeout',
    `The STF ran longer than ${timeoutMs} ms`,
    `it spent its whole time limit waiting for one of the ${workers} JavaScript workers and did not run`,
  );
}

function elapsed(run: ActiveRun): number {
  return Math.round((performance.now() - run.started) * 1000) / 1000;
}

function decodeCode(code: string | Uint8Array): string {
  if (typeof code === 'string') return code;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(code);
  } catch {
    throw new StfError('syntax', 'JavaScript code must be UTF-8 text');
  }
}

/** JSON.stringify with bigint support (as a number when it is safe, else as a string). */
function encodeJson(value: unknown, what: string): string {
  try {
    return (
      JSON.stringify(value, (_key, v: unknown) =>
        typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v,
      ) ?? 'null'
    );
  } catch (e) {
    throw new TypeError(`${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * The worker runs as compiled JavaScript: next to this file in dist/, or — when this file runs from the TypeScript
 * sources (vitest) — from the package's dist/, which must then be built and not older than the sources.
 */
function resolveWorkerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = join(dirname(here), 'worker.js');
  if (existsSync(sibling)) return sibling;
  const srcDir = dirname(here);
  const built = join(srcDir, '..', '..', 'dist', 'javascript', 'worker.js');
  if (!existsSync(built)) {
    throw new Error(`the JavaScript runtime's worker is not built (${built}): run \`pnpm build\` in packages/stf-runtime`);
  }
  for (const file of readdirSync(srcDir)) {
    if (!file.endsWith('.ts')) continue;
    const out = join(srcDir, '..', '..', 'dist', 'javascript', file.replace(/\.ts$/, '.js'));
    if (!existsSync(out) || statSync(out).mtimeMs < statSync(join(srcDir, file)).mtimeMs) {
      throw new Error(`dist/javascript/ is older than src/javascript/${file}: run \`pnpm build\` in packages/stf-runtime`);
    }
  }
  return built;
}
