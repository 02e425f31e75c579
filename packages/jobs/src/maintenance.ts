/**
 * Periodic clean-up work of a process that runs background jobs: sweeps that find what a crash left behind
 * (interrupted runs, temp files, orphan blobs) and remove or settle it. Each task runs at start and then every
 * `intervalMs` of its own; a task never overlaps itself, and a failing task is reported and tried again at its next
 * turn. Every process may run the same tasks: they must be idempotent and safe to run concurrently.
 */
import { misuse } from './errors.js';

export interface MaintenanceTask {
  /** For logs: `interrupted workflow runs`, `orphan blobs`, … */
  name: string;
  /** Milliseconds between two runs (from the end of one to the start of the next). */
  intervalMs: number;
  /** Does one sweep; may resolve with how much it did (a count, for the log). `signal` aborts when maintenance stops. */
  run: (signal: AbortSignal) => Promise<unknown>;
}

export interface MaintenanceOptions {
  tasks: MaintenanceTask[];
  /** A task's sweep did something (a count above 0). */
  onResult?: (task: string, count: number) => void;
  /** A task's sweep failed; it is tried again at its next turn. */
  onError?: (task: string, err: Error) => void;
}

export class Maintenance {
  readonly #tasks: MaintenanceTask[];
  readonly #onResult: (task: string, count: number) => void;
  readonly #onError: (task: string, err: Error) => void;
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #running = new Set<Promise<void>>();
  readonly #stopping = new AbortController();
  #started = false;

  constructor(opts: MaintenanceOptions) {
    for (const t of opts.tasks) {
      if (!(t.intervalMs >= 1)) throw misuse(`maintenance task ${t.name}: intervalMs at least 1`);
    }
    this.#tasks = opts.tasks;
    this.#onResult = opts.onResult ?? (() => {});
    this.#onError = opts.onError ?? ((task, err) => console.error(`[@wds/jobs] maintenance: ${task}:`, err));
  }

  /** Runs every task now, then on its interval. Calling it again does nothing. */
  start(): void {
    if (this.#started || this.#stopping.signal.aborted) return;
    this.#started = true;
    for (const task of this.#tasks) this.#turn(task);
  }

  /** Runs every task once and waits for them (tests, and a sweep on demand); independent of the schedule. */
  async runOnce(): Promise<void> {
    await Promise.all(this.#tasks.map((task) => this.#sweep(task)));
  }

  /** Stops the schedule, aborts the sweeps under way and waits for them to settle. Harmless twice. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    await Promise.all([...this.#running]);
  }

  #turn(task: MaintenanceTask): void {
    if (this.#stopping.signal.aborted) return;
    const sweep = this.#sweep(task).then(() => {
      this.#running.delete(sweep);
      if (this.#stopping.signal.aborted) return;
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        this.#turn(task);
      }, task.intervalMs);
      timer.unref();
      this.#timers.add(timer);
    });
    this.#running.add(sweep);
  }

  async #sweep(task: MaintenanceTask): Promise<void> {
    try {
      const count = await task.run(this.#stopping.signal);
      if (typeof count === 'number' && count > 0) this.#onResult(task.name, count);
    } catch (err) {
      if (!this.#stopping.signal.aborted) this.#onError(task.name, err instanceof Error ? err : new Error(String(err)));
    }
  }
}
