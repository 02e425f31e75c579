/**
 * The main thread's side of the save-time compile check: one lazily started worker thread (compile-worker.ts)
 * that keeps a loaded QuickJS module for all checks. Checks run one at a time. Each has a wall-clock limit (the
 * run's `timeoutMs`: code that cannot compile within it could never run); a worker past it is terminated and
 * replaced. The worker is stopped after a while without checks and does not keep the process alive when idle.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { StfError, type StfLimits } from '../types.js';
import type { CompileOutcome, FromCompileWorker, ToCompileWorker } from './compile-check.js';

/** How long an idle compile worker is kept. */
const IDLE_MS = 5 * 60_000;
/** Extra time the main thread allows after the deadline QuickJS itself is given. */
const GRACE_MS = 100;
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Compiles `code` the way a run would, without running it. Resolves when it compiles; rejects with a StfError
 * (kind `syntax` with line and column in `details`, or `stack`, `memory`, `timeout`) when it cannot, and with a
 * plain Error when the checker itself failed.
 */
export async function checkJavascriptSyntax(code: string, limits: Pick<StfLimits, 'timeoutMs' | 'memoryBytes'>): Promise<void> {
  const outcome = await checker().check(code, limits);
  if (outcome.ok) return;
  if ('internal' in outcome) throw new Error(outcome.internal);
  throw new StfError(outcome.kind, outcome.message, outcome.details);
}

interface Job {
  id: number;
  code: string;
  memoryBytes: number;
  timeoutMs: number;
  resolve(outcome: CompileOutcome): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  dead: boolean;
}

class Checker {
  private readonly workerFile = resolveWorkerFile();
  private slot: Slot | undefined;
  private queue: Job[] = [];
  private current: { job: Job; timer: NodeJS.Timeout } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private seq = 0;

  check(code: string, limits: Pick<StfLimits, 'timeoutMs' | 'memoryBytes'>): Promise<CompileOutcome> {
    return new Promise((resolve, reject) => {
      const timeoutMs = Math.max(1, Math.min(limits.timeoutMs, MAX_TIMER_MS - GRACE_MS));
      this.queue.push({ id: ++this.seq, code, memoryBytes: limits.memoryBytes, timeoutMs, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.current) return;
    if (this.queue.length === 0) {
      this.idle();
      return;
    }
    clearTimeout(this.idleTimer);
    const slot = this.slot ?? this.spawn();
    slot.worker.ref(); // a pending check keeps the process alive, also while the worker starts
    if (!slot.ready) return; // the 'ready' message pumps again
    const job = this.queue.shift()!;
    const timer = setTimeout(() => this.onTimeout(slot, job), job.timeoutMs + GRACE_MS);
    this.current = { job, timer };
    const msg: ToCompileWorker = {
      id: job.id,
      code: job.code,
      memoryBytes: job.memoryBytes,
      interruptAt: Date.now() + job.timeoutMs,
    };
    slot.worker.postMessage(msg);
  }

  private idle(): void {
    const slot = this.slot;
    if (!slot) return;
    slot.worker.unref();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.slot === slot && !this.current && this.queue.length === 0) this.drop(slot);
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  private spawn(): Slot {
    const worker = new Worker(this.workerFile);
    const slot: Slot = { worker, ready: false, dead: false };
    this.slot = slot;
    worker.on('message', (msg: FromCompileWorker) => {
      if (slot.dead) return;
      switch (msg.type) {
        case 'ready':
          slot.ready = true;
          this.pump();
          break;
        case 'fatal':
          this.onCrash(slot, new Error(`the JavaScript syntax checker could not load QuickJS: ${msg.message}`));
          break;
        case 'result':
          this.finish(msg.id, (job) => job.resolve(msg.outcome));
          break;
      }
    });
    worker.on('error', (e) => this.onCrash(slot, e));
    worker.on('exit', (code) => this.onCrash(slot, new Error(`the JavaScript syntax checker exited (code ${code})`)));
    return slot;
  }

  private finish(id: number, settle: (job: Job) => void): void {
    const current = this.current;
    if (!current || current.job.id !== id) return;
    clearTimeout(current.timer);
    this.current = undefined;
    settle(current.job);
    this.pump();
  }

  private drop(slot: Slot): void {
    slot.dead = true;
    if (this.slot === slot) this.slot = undefined;
    void slot.worker.terminate().catch(() => undefined);
  }

  private onTimeout(slot: Slot, job: Job): void {
    this.drop(slot);
    this.finish(job.id, (j) =>
      j.resolve({
        ok: false,
        kind: 'timeout',
        message: `Compiling the code took longer than the time limit (${j.timeoutMs} ms)`,
      }),
    );
  }

  private onCrash(slot: Slot, error: Error): void {
    if (slot.dead) return;
    const wasReady = slot.ready;
    this.drop(slot);
    const current = this.current;
    if (current) this.finish(current.job.id, (job) => job.reject(error));
    // A worker that never started would fail again: fail the waiting checks rather than loop.
    if (!wasReady) for (const job of this.queue.splice(0)) job.reject(error);
    this.pump();
  }
}

let instance: Checker | undefined;

function checker(): Checker {
  instance ??= new Checker();
  return instance;
}

/**
 * The worker runs as compiled JavaScript: next to this file in dist/, or — when this file runs from the TypeScript
 * sources (vitest) — from the package's dist/, which must then be built and not older than the sources.
 */
function resolveWorkerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = join(dirname(here), 'compile-worker.js');
  if (existsSync(sibling)) return sibling;
  const srcDir = dirname(here);
  const distDir = join(srcDir, '..', '..', 'dist', 'javascript');
  const built = join(distDir, 'compile-worker.js');
  if (!existsSync(built)) {
    throw new Error(`the JavaScript syntax checker is not built (${built}): run \`pnpm build\` in packages/stf-runtime`);
  }
  for (const file of readdirSync(srcDir)) {
    if (!file.endsWith('.ts')) continue;
    const out = join(distDir, file.replace(/\.ts$/, '.js'));
    if (!existsSync(out) || statSync(out).mtimeMs < statSync(join(srcDir, file)).mtimeMs) {
      throw new Error(`dist/javascript/ is older than src/javascript/${file}: run \`pnpm build\` in packages/stf-runtime`);
    }
  }
  return built;
}
