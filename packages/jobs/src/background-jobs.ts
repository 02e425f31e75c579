/**
 * The background work of one service process on a `JobQueue`: handlers are attached up front (`handle`) and set
 * up when the queue starts, which is on the first enqueue or an explicit `start()`, whichever comes first. A
 * process that does not work the queues (`work: false`: an API process with RUN_JOBS=false) only declares them,
 * so it can enqueue what the workers run. Every attempt a process runs leaves one log line.
 */
import { JobQueue } from './job-queue.js';
import type { Job } from './types.js';

/** The two levels a job's log line uses; a pino logger fits as it is. */
export interface JobLogger {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
}

export interface BackgroundJobsOptions {
  connectionString: string;
  /** How often an idle queue asks for work; whole seconds, at least one. */
  pollIntervalMs: number;
  logger: JobLogger;
  /** Work the queues here (default), or only declare them so that this process can enqueue. */
  work?: boolean;
}

export interface JobOptions {
  concurrency: number;
  /** The job's deadline; a job running longer is failed and retried. */
  expireInSeconds: number;
  retryLimit: number;
  /** After the last failure, with a readable message. */
  onFailed?: (data: unknown, message: string) => Promise<void>;
}

/** What a handler is given: the job's data and which attempt this is (1 first, 2 the first retry, …). */
export type JobRun = Pick<Job<unknown>, 'data' | 'attempt' | 'signal'>;

interface Handler {
  run: (job: JobRun) => Promise<void>;
  opts: JobOptions;
}

/** How long `stop()` waits for the jobs in progress before they are failed as interrupted (and retried elsewhere). */
const STOP_TIMEOUT_MS = 5000;

export class BackgroundJobs {
  readonly #queue: JobQueue;
  readonly #logger: JobLogger;
  readonly #work: boolean;
  readonly #handlers = new Map<string, Handler>();
  /** Queues registered or declared by an earlier start that failed later on. */
  readonly #setUp = new Set<string>();
  #starting: Promise<void> | undefined;
  #stopped = false;
  #stopping: Promise<void> | undefined;

  constructor(opts: BackgroundJobsOptions) {
    this.#logger = opts.logger;
    this.#work = opts.work ?? true;
    const seconds = Math.max(1, Math.round(opts.pollIntervalMs / 1000));
    this.#queue = new JobQueue({
      connectionString: opts.connectionString,
      pollingIntervalSeconds: seconds,
      // A job whose process died is retried at most this long after its deadline.
      maintenanceIntervalSeconds: Math.max(1, seconds * 5),
      onError: (err) => opts.logger.warn({ err: err.message }, 'job queue error'),
    });
  }

  /** Attaches the handler of a queue (before start). */
  handle(name: string, run: (job: JobRun) => Promise<void>, opts: JobOptions): void {
    this.#handlers.set(name, { run, opts });
  }

  /** Starts the queue and sets up every handled queue; a failed start is tried again by the next start or enqueue. */
  start(): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error('the job queue has stopped'));
    this.#starting ??= this.#start().catch((err) => {
      this.#starting = undefined;
      throw err;
    });
    return this.#starting;
  }

  async #start(): Promise<void> {
    await this.#queue.start();
    for (const [name, h] of this.#handlers) {
      if (this.#setUp.has(name)) continue;
      const { onFailed } = h.opts;
      const settings = {
        expireInSeconds: h.opts.expireInSeconds,
        retryLimit: h.opts.retryLimit,
        ...(onFailed ? { onFailed: (job: { data: unknown }, message: string) => onFailed(job.data, message) } : {}),
      };
      if (this.#work) await this.#queue.register(name, (job) => this.#run(name, h, job), { ...settings, concurrency: h.opts.concurrency });
      else await this.#queue.declare(name, settings);
      this.#setUp.add(name);
    }
  }

  /** One attempt of a job, with a log line of how it ended (which process ran it, how long it took). */
  async #run(queue: string, h: Handler, job: JobRun): Promise<void> {
    const started = performance.now();
    try {
      await h.run(job);
      this.#logger.info({ queue, attempt: job.attempt, ms: Math.round(performance.now() - started) }, 'job done');
    } catch (err) {
      this.#logger.warn({ queue, attempt: job.attempt, ms: Math.round(performance.now() - started), err: (err as Error).message }, 'job attempt failed');
      throw err;
    }
  }

  /**
   * Queues a job (starting the queue first); with a key, not while another with that key waits or runs; a higher
   * `priority` is taken first. Returns whether one was queued.
   */
  async enqueue(name: string, data: object, singletonKey?: string, opts: { priority?: number } = {}): Promise<boolean> {
    await this.start();
    const id = await this.#queue.enqueue(name, data, { ...(singletonKey ? { singletonKey } : {}), ...opts });
    return id !== null;
  }

  /** Each queue's backlog (JobQueue.backlog), for metrics; empty before the queue has started. */
  backlog(): Promise<{ queue: string; waiting: number; active: number; oldestSeconds: number }[]> {
    return this.#stopped ? Promise.resolve([]) : this.#queue.backlog();
  }

  /** Stops for good, waiting (bounded) for the jobs in progress. Idempotent: a second call waits for the first. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping ??= (async () => {
      if (!this.#starting) return;
      await this.#starting.catch(() => undefined);
      await this.#queue.stop({ graceful: true, timeoutMs: STOP_TIMEOUT_MS });
    })();
    return this.#stopping;
  }
}
