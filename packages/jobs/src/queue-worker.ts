import { setTimeout as sleep } from 'node:timers/promises';

export interface QueueWorkerOptions<J> {
  concurrency: number;
  pollingIntervalMs: number;
  /** Claims up to `limit` jobs (marks them active); an empty list when there is nothing to do. */
  fetch: (limit: number) => Promise<J[]>;
  /** Runs and settles one job; resolves promptly once `interrupted` is aborted. Must not reject. */
  execute: (job: J, interrupted: AbortSignal) => Promise<void>;
  onError: (err: Error) => void;
  /** The loop went round once (JobQueueOptions.onPolled). */
  onPolled?: () => void;
}

interface Running {
  interrupt: AbortController;
  done: Promise<void>;
}

/**
 * One polling loop per queue: it claims as many jobs as there are free slots, runs each on its own, and polls
 * again when the queue ran dry or a slot frees. (pg-boss's own `work()` completes and fails jobs without awaiting
 * the query, so a database hiccup there becomes an unhandled rejection; here every query is awaited.)
 */
export class QueueWorker<J> {
  readonly #opts: QueueWorkerOptions<J>;
  readonly #running = new Set<Running>();
  #stopping = false;
  #nudge: (() => void) | undefined;
  #loop: Promise<void> = Promise.resolve();

  constructor(opts: QueueWorkerOptions<J>) {
    this.#opts = opts;
  }

  start(): void {
    this.#loop = this.#poll();
  }

  /** Polls now instead of at the end of the interval (after a local enqueue, or when a slot frees). */
  wake(): void {
    const nudge = this.#nudge;
    this.#nudge = undefined;
    nudge?.();
  }

  /** Stops claiming jobs, waits up to `waitMs` for running ones, interrupts the rest and waits for them to settle. */
  async stop(waitMs: number): Promise<void> {
    this.#stopping = true;
    this.wake();
    await this.#loop;
    const settled = () => Promise.all([...this.#running].map((r) => r.done));
    if (waitMs > 0 && this.#running.size > 0) {
      const timeout = new AbortController();
      await Promise.race([settled(), sleep(waitMs, undefined, { signal: timeout.signal }).catch(() => {})]);
      timeout.abort();
    }
    for (const r of this.#running) r.interrupt.abort();
    await settled();
  }

  async #poll(): Promise<void> {
    while (!this.#stopping) {
      const free = this.#opts.concurrency - this.#running.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const jobs = await this.#opts.fetch(free);
          for (const job of jobs) this.#run(job);
          claimed = jobs.length;
        } catch (err) {
          this.#opts.onError(err as Error);
        }
      }
      this.#opts.onPolled?.();
      // A full batch means the queue may hold more: claim again at once. Otherwise wait for the interval, a
      // local enqueue or a freed slot.
      if (!this.#stopping && (free === 0 || claimed < free)) await this.#wait(this.#opts.pollingIntervalMs);
    }
  }

  #run(job: J): void {
    const interrupt = new AbortController();
    const entry: Running = {
      interrupt,
      done: this.#opts
        .execute(job, interrupt.signal)
        .catch((err: Error) => this.#opts.onError(err))
        .finally(() => {
          this.#running.delete(entry);
          this.wake();
        }),
    };
    this.#running.add(entry);
  }

  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#nudge = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#nudge = done;
    });
  }
}
