export interface JobQueueOptions {
  connectionString: string;
  /** PostgreSQL schema of pg-boss's tables, created on first start. Default `pgboss`. */
  schema?: string;
  /** How often an idle queue asks the database for work. Default 2 s. */
  pollingIntervalSeconds?: number;
  /**
   * pg-boss's supervise interval: how often some instance sweeps jobs that outlived their deadline (crashed
   * workers) and archives old ones. A crashed job is retried at most this long after its deadline. Default 30 s.
   */
  maintenanceIntervalSeconds?: number;
  /**
   * How often a running attempt is marked alive, in seconds. Default 10. While its handler runs, the process
   * moves the job's deadline in the database to `heartbeatStaleSeconds` from now (never past the attempt's own
   * deadline), so maintenance on any instance expires the job soon after its process died instead of after
   * `expireInSeconds`.
   */
  heartbeatIntervalSeconds?: number;
  /** A running job without a heartbeat for this long counts as dead (expired into a retry). Default 60; at least twice the interval. */
  heartbeatStaleSeconds?: number;
  /** Errors nobody awaits: a lost database connection, a failed completion. Default: console.error. */
  onError?: (err: Error) => void;
  /**
   * A queue's polling loop went round once (it claimed what fitted its free slots, or had none free): tests wait for
   * polls in which something must not happen instead of sleeping. Dead-letter queues are `<name>__failed`.
   */
  onPolled?: (queue: string) => void;
  /** This instance ran pg-boss's maintenance (expiring jobs past their deadline): tests wait for it instead of sleeping. */
  onMaintained?: () => void;
}

export interface StopOptions {
  /** Wait for running handlers (up to `timeoutMs`) before interrupting them. Default true. */
  graceful?: boolean;
  /** Default 30 000. */
  timeoutMs?: number;
}

/** One attempt at a job, as its handler sees it. */
export interface Job<T> {
  id: string;
  data: T;
  /** 1 for the first attempt, 2 for the first retry, … */
  attempt: number;
  /**
   * Aborted when the deadline passes or the queue stops without waiting. The attempt counts as failed from that
   * moment; pass the signal to fetch and queries so the work stops instead of overlapping with the retry.
   */
  signal: AbortSignal;
}

export type JobHandler<T> = (job: Job<T>) => Promise<void>;

/** A job that failed for the last time, as `onFailed` sees it. */
export interface FailedJob<T> {
  /** The id `enqueue` returned. */
  id: string;
  data: T;
}

export interface RegisterOptions<T> {
  /** Jobs of this queue that one JobQueue runs at once. Default 1. */
  concurrency?: number;
  /**
   * The deadline of one attempt, whole seconds, less than 24 h: the handler's signal aborts when it passes, even
   * while its process is alive and heartbeating. A crashed attempt is expired sooner, by its stopped heartbeat.
   */
  expireInSeconds: number;
  /** Retries after the first attempt. Default 2. */
  retryLimit?: number;
  /** Whole seconds between a failure and the retry. Default 0. */
  retryDelaySeconds?: number;
  /**
   * Called once the job has failed for the last time (thrown error, deadline or crash), with a readable reason.
   * Delivered at least once, by whichever instance that registered this queue is running; if it throws it is
   * tried again (pg-boss gives the delivery the job's own retryLimit).
   */
  onFailed?: (job: FailedJob<T>, message: string) => Promise<void>;
}

export interface EnqueueOptions {
  /**
   * At most one job per key is queued or running in this queue; `enqueue` returns null while one is. A running
   * job whose heartbeat stopped does not count: `enqueue` expires it on the spot (into its retry, which then is the
   * queued job, or into `failed`, and then a new job is queued).
   */
  singletonKey?: string;
  /** Higher runs first (pg-boss orders waiting jobs by priority, then age); default 0. */
  priority?: number;
}

export type JobState = 'created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed';
