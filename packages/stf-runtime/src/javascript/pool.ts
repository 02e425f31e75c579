/**
 * The JavaScript STF runtime (DECISIONS §6): a small pool of worker threads, each owning a QuickJS WASM module.
 * The main thread enforces the wall-clock limit: a worker that does not answer within `limits.timeoutMs` is
 * terminated and replaced, so a guest stuck in garbage collection or in native code still ends on time.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { type LogLine, type SqlCallResult, StfError, type StfRunRequest, type StfRunResult, type StfRuntime } from '../types.js';
import { bundledLibrarySources } from './libraries.js';
import { createMasker } from './mask.js';
import type { FromWorker, RunOutcome, SqlAnswer, ToWorker, WorkerInit } from './protocol.js';

export interface JavascriptRuntimeOptions {
  /** Worker threads in the pool (default 2). Runs beyond that wait for a free worker. */
  workers?: number;
  /** Libraries importable by package name (name → ES module source); defaults to the bundled libraries. */
  libraries?: Record<string, string>;
  /** Start (and warm up) all workers now rather than on the first runs (default true). */
  prewarm?: boolean;
}

export interface JavascriptRuntimeStats {
  workers: number;
  busy: number;
  queued: number;
  /** Workers terminated (hard timeout) or lost (crash) and replaced. */
  workerRestarts: number;
  /** QuickJS modules replaced inside a worker after an abort poisoned them. */
  engineResets: number;
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
  started: number;
  timer: NodeJS.Timeout;
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
  onPoisoned?: () => void;
}

interface Waiter {
  resolve(slot: Slot): void;
  reject(error: Error): void;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

class Pool implements JavascriptRuntime {
  private readonly size: number;
  private readonly libraries: Record<string, string>;
  private readonly workerFile: string;
  private slots: Slot[] = [];
  private waiters: Waiter[] = [];
  private closed = false;
  private runSeq = 0;
  private workerRestarts = 0;
  private engineResets = 0;

  constructor(opts: JavascriptRuntimeOptions) {
    this.size = Math.max(1, Math.floor(opts.workers ?? 2));
    // Posted to each worker once, when it starts (workerData), not with each run.
    this.libraries = { ...(opts.libraries ?? bundledLibrarySources()) };
    this.workerFile = resolveWorkerFile();
    if (opts.prewarm ?? true) while (this.slots.length < this.size) this.spawn();
  }

  stats(): JavascriptRuntimeStats {
    return {
      workers: this.slots.length,
      busy: this.slots.filter((s) => s.busy).length,
      queued: this.waiters.length,
      workerRestarts: this.workerRestarts,
      engineResets: this.engineResets,
    };
  }

  async run(req: StfRunRequest): Promise<StfRunResult> {
    const code = decodeCode(req.code);
    const boot = encodeJson(
      { input: req.input ?? null, sources: req.sources ?? {}, caller: req.caller ?? null, env: req.secrets ?? {} },
      'the input and sources must be JSON-serialisable',
    );
    const slot = await this.acquire();
    try {
      await slot.ready;
    } catch (e) {
      this.release(slot);
      throw e;
    }
    const limits = req.limits;
    const timeoutMs = Math.max(1, Math.min(limits.timeoutMs, MAX_TIMER_MS));
    return new Promise<StfRunResult>((resolve, reject) => {
      const started = performance.now();
      const run: ActiveRun = {
        id: ++this.runSeq,
        req,
        logs: [],
        started,
        timer: setTimeout(() => this.onTimeout(slot, run), timeoutMs),
        resolve,
        reject,
      };
      slot.run = run;
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
    });
  }

  async poisonEngineForTests(): Promise<void> {
    const slot = await this.acquire();
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
    for (const w of this.waiters.splice(0)) w.reject(error);
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

  private acquire(): Promise<Slot> {
    if (this.closed) return Promise.reject(new Error('the JavaScript runtime is closed'));
    const idle = this.slots.find((s) => !s.busy && !s.dead);
    if (idle) return Promise.resolve(this.markBusy(idle));
    if (this.slots.length < this.size) return Promise.resolve(this.markBusy(this.spawn()));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** A busy worker keeps the process alive (it may be starting, or blocked waiting for an SQL answer). */
  private markBusy(slot: Slot): Slot {
    slot.busy = true;
    slot.worker.ref();
    return slot;
  }

  private release(slot: Slot): void {
    slot.run = undefined;
    slot.busy = false;
    slot.worker.unref();
    if (slot.dead) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(this.markBusy(slot));
  }

  private spawn(): Slot {
    const signal = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    port1.unref();
    const init: WorkerInit = { signal: signal.buffer as SharedArrayBuffer, answers: port2, libraries: this.libraries };
    const worker = new Worker(this.workerFile, { workerData: init, transferList: [port2] });
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
          this.onResult(slot, msg.runId, msg.outcome);
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

  /** Removes a dead slot and starts a fresh worker in its place, handing it to the next waiting run. */
  private replace(slot: Slot): void {
    slot.dead = true;
    this.slots = this.slots.filter((s) => s !== slot);
    if (this.closed) return;
    if (!slot.isReady) {
      // It never started: do not loop on a worker that cannot start; fail the waiting runs instead.
      if (this.slots.length === 0) {
        const error = new Error('the JavaScript worker could not start');
        for (const w of this.waiters.splice(0)) w.reject(error);
      }
      return;
    }
    const fresh = this.spawn();
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(this.markBusy(fresh));
  }

  // ---- events of a run

  private finish(slot: Slot, run: ActiveRun, settle: () => void): void {
    if (slot.run !== run) return;
    clearTimeout(run.timer);
    settle();
    slot.run = undefined;
  }

  private onResult(slot: Slot, runId: number, outcome: RunOutcome): void {
    const run = slot.run;
    if (!run || run.id !== runId) return;
    const duration_ms = elapsed(run);
    this.finish(slot, run, () => {
      if (outcome.ok) {
        run.resolve({ output: JSON.parse(outcome.output) as unknown, logs: run.logs, duration_ms });
      } else if ('internal' in outcome) {
        run.reject(new Error(outcome.internal));
      } else {
        const mask = createMasker(Object.values(run.req.secrets ?? {}));
        const details = outcome.details === undefined ? undefined : mask(outcome.details);
        run.reject(new StfError(outcome.kind, mask(outcome.message), details, run.logs));
      }
    });
    this.release(slot);
  }

  private onTimeout(slot: Slot, run: ActiveRun): void {
    if (slot.run !== run) return;
    this.finish(slot, run, () =>
      run.reject(
        new StfError('timeout', `The STF ran longer than ${run.req.limits.timeoutMs} ms`, 'the worker was stopped', run.logs),
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
    if (run) this.finish(slot, run, () => run.reject(new Error(`the JavaScript worker failed: ${error.message}`)));
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
      Atomics.add(slot.signal, 0, 1); // after the post: the worker drains the port once it sees the new count
      Atomics.notify(slot.signal, 0);
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
        reply({ seq, ok: true, json: encodeJson(result, 'the sql result is not JSON-serialisable') });
      })
      .catch((e: unknown) => reply({ seq, ok: false, message: e instanceof Error ? e.message : String(e) }));
  }
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
