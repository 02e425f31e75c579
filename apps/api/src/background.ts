/**
 * Background work of this process (file and table-row embeddings, drive syncs) on the PostgreSQL job queue, so
 * jobs survive restarts and several API processes share them. The queue starts on the first enqueue or at server
 * start (`start()`), whichever comes first; handlers are attached as the queue starts.
 */
import { JobQueue } from '@wds/jobs';
import type { Logger } from './logger.js';

export interface JobOptions {
  concurrency: number;
  /** The job's deadline; a job running longer is failed and retried. */
  expireInSeconds: number;
  retryLimit: number;
  /** After the last failure, with a readable message. */
  onFailed?: (data: unknown, message: string) => Promise<void>;
}

/** What a handler is given: the job's data and which attempt this is (1 first, 2 the first retry, …). */
export interface JobRun {
  data: unknown;
  attempt: number;
  signal: AbortSignal;
}

interface Handler {
  run: (job: JobRun) => Promise<void>;
  opts: JobOptions;
}

export class Background {
  private readonly queue: JobQueue;
  private readonly handlers = new Map<string, Handler>();
  private starting: Promise<void> | undefined;
  private stopped = false;
  private stopping: Promise<void> | undefined;

  private readonly logger: Logger;

  /** False in an API process with RUN_JOBS=false: its queues are declared (so it can enqueue) but not worked. */
  private readonly work: boolean;
  private readonly setUp = new Set<string>();

  constructor(opts: { connectionString: string; pollIntervalMs: number; logger: Logger; work?: boolean }) {
    this.logger = opts.logger;
    this.work = opts.work ?? true;
    const seconds = Math.max(1, Math.round(opts.pollIntervalMs / 1000));
    this.queue = new JobQueue({
      connectionString: opts.connectionString,
      pollingIntervalSeconds: seconds,
      // A job whose process died is retried at most this long after its deadline.
      maintenanceIntervalSeconds: Math.max(1, seconds * 5),
      onError: (err) => opts.logger.warn({ err: (err as Error).message }, 'job queue error'),
    });
  }

  /** Attaches the handler of a queue (before start). */
  handle(name: string, run: (job: JobRun) => Promise<void>, opts: JobOptions): void {
    this.handlers.set(name, { run, opts });
  }

  start(): Promise<void> {
    if (this.stopped) return Promise.reject(new Error('the job queue has stopped'));
    this.starting ??= (async () => {
      await this.queue.start();
      for (const [name, h] of this.handlers) {
        if (this.setUp.has(name)) continue; // by an earlier start that failed later on
        const settings = {
          expireInSeconds: h.opts.expireInSeconds,
          retryLimit: h.opts.retryLimit,
          ...(h.opts.onFailed ? { onFailed: (job: { data: unknown }, message: string) => (h.opts.onFailed as NonNullable<JobOptions['onFailed']>)(job.data, message) } : {}),
        };
        if (this.work) await this.queue.register(name, (job) => this.run(name, h, job), { ...settings, concurrency: h.opts.concurrency });
        else await this.queue.declare(name, settings);
        this.setUp.add(name);
      }
    })().catch((err) => {
      // A failed start (the database was away) is tried again by the next start or enqueue.
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  /** One attempt of a job, with a log line of how it ended (which process ran it, how long it took). */
  private async run(queue: string, h: Handler, job: JobRun): Promise<void> {
    const started = performance.now();
    try {
      await h.run(job);
      this.logger.info({ queue, attempt: job.attempt, ms: Math.round(performance.now() - started) }, 'job done');
    } catch (err) {
      this.logger.warn({ queue, attempt: job.attempt, ms: Math.round(performance.now() - started), err: (err as Error).message }, 'job attempt failed');
      throw err;
    }
  }

  /** Queues a job; with a key, not while another with that key waits. Returns whether one was queued. */
  async enqueue(name: string, data: object, singletonKey?: string): Promise<boolean> {
    await this.start();
    const id = await this.queue.enqueue(name, data, singletonKey ? { singletonKey } : {});
    return id !== null;
  }

  /** Idempotent: a second call waits for the first. */
  stop(): Promise<void> {
    this.stopped = true;
    this.stopping ??= (async () => {
      if (!this.starting) return;
      await this.starting.catch(() => undefined);
      await this.queue.stop({ graceful: true, timeoutMs: 5000 });
    })();
    return this.stopping;
  }
}
