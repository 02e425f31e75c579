import { randomUUID } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { misuse } from './errors.js';
import {
  deadlineMessage,
  errorMessage,
  failureMessage,
  INTERRUPTED_MESSAGE,
  PG_BOSS_TIMEOUT_OUTPUT,
  SUPERSEDED_MESSAGE,
} from './failure-message.js';
import { beat, findPendingJob, grantExtraAttempt, inTransaction, lockExpiredJobs, lockKey, lockOwnAttempt } from './pgboss-tables.js';
import { QueueWorker } from './queue-worker.js';
import type {
  EnqueueOptions,
  JobHandler,
  JobQueueOptions,
  JobState,
  RegisterOptions,
  StopOptions,
} from './types.js';

/** What is stored as a pg-boss job's data: the id travels along so `onFailed` gets it from the dead letter. */
interface Envelope {
  id: string;
  data: unknown;
}

type FetchedJob = PgBoss.JobWithMetadata<Envelope>;

/** How the jobs of one pg-boss queue are run, and what a failed attempt leaves as the job's output. */
interface Work {
  run: (job: FetchedJob, signal: AbortSignal) => Promise<void>;
  failureOutput: (job: FetchedJob, message: string) => object;
  /** The attempt's own deadline; the heartbeat never moves the job's deadline in the database past it. */
  deadlineSeconds: number;
}

interface QueueSettings {
  name: string;
  expireInSeconds: number;
  retryLimit: number;
  retryDelay: number;
  deadLetter: string | undefined;
}

/** The dead-letter queue of `name`: pg-boss moves a job there in the same statement that fails it for good. */
const failedQueueName = (name: string) => `${name}__failed`;

const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,49}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_EXPIRE_SECONDS = 24 * 60 * 60 - 1;
/** The deadline of one delivery of `onFailed` (a dead-letter job). */
const DEAD_LETTER_DEADLINE_SECONDS = 15 * 60;

/**
 * The PostgreSQL-backed job queue of the service's background work (pg-boss 10), shared by every process that
 * points at the same database and schema.
 *
 * Guarantees:
 * - At least once. A job runs until an attempt completes; a handler may therefore run more than once for the same
 *   job (after a crash, or when a settle query is lost), so handlers must be idempotent.
 * - Deadline. `expireInSeconds` bounds one attempt. When it passes, the handler's `signal` is aborted and the
 *   attempt fails, then is retried (`retryLimit`, `retryDelaySeconds`); after the last failure `onFailed` runs.
 * - Heartbeat. While a handler runs, its process marks the job alive every `heartbeatIntervalSeconds` by moving
 *   the job's deadline in the database (pg-boss's `expire_in`) to `heartbeatStaleSeconds` from now, never past
 *   the attempt's own deadline. A job is fetched with the stale threshold as its deadline, so the window before
 *   the first beat is covered too. An attempt that finds its job no longer its own (expired meanwhile) is aborted.
 * - Restarts. Jobs live in PostgreSQL. A job whose process died while it was active stays `active` until its
 *   heartbeat is stale; then maintenance on any running instance (every `maintenanceIntervalSeconds`) expires it
 *   into a retry, or into `failed` + `onFailed` if it was the last attempt. `stop({ graceful: false })` and a
 *   graceful stop that times out fail the running attempts at once instead ("interrupted"), to be retried elsewhere
 *   without using up one of the job's attempts (a rolling restart says nothing about the job).
 * - Settling is fenced: an attempt completes or fails only while it is still the active attempt it fetched, so a
 *   late handler never settles the retry that replaced it.
 *
 * Dedupe (`singletonKey`): no pg-boss 10 policy returns null for a second job while the first one is *active*
 * ('singleton' only limits active jobs, 'stately' allows one queued next to the active one, and 'short' and
 * 'stately' also collapse all jobs without a key into one). So queues use the 'standard' policy and `enqueue`
 * checks, under a transaction-scoped advisory lock on (queue, key), that no job with the key is created, waiting
 * for a retry or active before inserting. A request made while the running job is finishing is dropped, not queued.
 * A running job with the key whose heartbeat is stale (its process died) never blocks: `enqueue` expires it
 * first, as maintenance would, so the request is answered by its retry or, after its last attempt, by a new job.
 *
 * `onFailed` is reliable because it does not run in the failing process: the queue gets a pg-boss dead-letter queue
 * (`<name>__failed`), into which pg-boss copies the job in the same statement that fails it for good, whether a
 * handler failed it or maintenance expired it after a crash. Every JobQueue that registered the queue also works
 * its dead-letter queue by calling `onFailed`.
 */
export class JobQueue {
  readonly #schema: string;
  readonly #connectionString: string;
  readonly #pollingIntervalMs: number;
  readonly #maintenanceIntervalSeconds: number;
  readonly #heartbeatIntervalMs: number;
  readonly #staleSeconds: number;
  readonly #onError: (err: Error) => void;
  readonly #onPolled: ((queue: string) => void) | undefined;
  readonly #onMaintained: (() => void) | undefined;
  readonly #workers = new Map<string, QueueWorker<FetchedJob>>();
  readonly #registered = new Set<string>();
  #pool: pg.Pool | undefined;
  #boss: PgBoss | undefined;
  #starting: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;

  constructor(opts: JobQueueOptions) {
    const {
      pollingIntervalSeconds = 2,
      maintenanceIntervalSeconds = 30,
      heartbeatIntervalSeconds = 10,
      heartbeatStaleSeconds = 60,
    } = opts;
    this.#schema = opts.schema ?? 'pgboss';
    if (!SCHEMA_NAME.test(this.#schema)) {
      throw misuse(`schema ${JSON.stringify(this.#schema)}: a lower-case identifier`);
    }
    if (!(pollingIntervalSeconds >= 0.1)) throw misuse('pollingIntervalSeconds: at least 0.1');
    if (!Number.isInteger(maintenanceIntervalSeconds) || maintenanceIntervalSeconds < 1) {
      throw misuse('maintenanceIntervalSeconds: a whole number of seconds, at least 1');
    }
    if (!(heartbeatIntervalSeconds >= 0.1)) throw misuse('heartbeatIntervalSeconds: at least 0.1');
    if (!Number.isInteger(heartbeatStaleSeconds) || heartbeatStaleSeconds < 2 * heartbeatIntervalSeconds) {
      throw misuse('heartbeatStaleSeconds: whole seconds, at least twice heartbeatIntervalSeconds');
    }
    this.#heartbeatIntervalMs = heartbeatIntervalSeconds * 1000;
    this.#staleSeconds = heartbeatStaleSeconds;
    this.#connectionString = opts.connectionString;
    this.#pollingIntervalMs = pollingIntervalSeconds * 1000;
    this.#maintenanceIntervalSeconds = maintenanceIntervalSeconds;
    this.#onError = opts.onError ?? ((err) => console.error('[@wds/jobs]', err));
    this.#onPolled = opts.onPolled;
    this.#onMaintained = opts.onMaintained;
  }

  /** Creates or migrates pg-boss's schema and starts maintenance. Calling it again returns the same start. */
  start(): Promise<void> {
    if (this.#stopping) return Promise.reject(misuse('a stopped JobQueue cannot start again; create a new one'));
    this.#starting ??= this.#start().catch((err) => {
      this.#starting = undefined; // a failed start may be tried again
      throw err;
    });
    return this.#starting;
  }

  async #start(): Promise<void> {
    const pool = new pg.Pool({ connectionString: this.#connectionString, application_name: 'wds-jobs' });
    pool.on('error', (err) => this.#onError(err));
    // A checked-out client (a transaction of ours) whose connection dies fails its query; without a listener its
    // 'error' event would also be thrown as an uncaught exception.
    pool.on('connect', (client) => client.on('error', () => {}));
    const boss = new PgBoss({
      // Our pool, so that enqueue and settle can run pg-boss's statements inside our own transactions.
      db: { executeSql: (text, values) => pool.query(text, values) },
      schema: this.#schema,
      schedule: false,
      supervise: true,
      maintenanceIntervalSeconds: this.#maintenanceIntervalSeconds,
    });
    boss.on('error', (err) => {
      if (!this.#stopping) this.#onError(err);
    });
    const onMaintained = this.#onMaintained;
    if (onMaintained) boss.on('maintenance', () => onMaintained());
    try {
      await boss.start();
    } catch (err) {
      await boss.stop({ graceful: false, close: false }).catch(() => {});
      await pool.end().catch(() => {});
      throw err;
    }
    this.#pool = pool;
    this.#boss = boss;
  }

  /**
   * Stops claiming jobs; if graceful, waits up to `timeoutMs` for running ones; fails what is still running as
   * interrupted (retried elsewhere); closes the connections. Harmless before start and when called twice.
   */
  stop(opts: StopOptions = {}): Promise<void> {
    if (!this.#starting) return this.#stopping ?? Promise.resolve();
    this.#stopping ??= this.#stop(opts);
    return this.#stopping;
  }

  async #stop({ graceful = true, timeoutMs = 30_000 }: StopOptions): Promise<void> {
    try {
      await this.#starting;
    } catch {
      return; // never started, nothing to close
    }
    const waitMs = graceful ? timeoutMs : 0;
    await Promise.all([...this.#workers.values()].map((w) => w.stop(waitMs)));
    await this.#boss?.stop({ graceful: false, close: false });
    await this.#pool?.end();
  }

  /**
   * Creates the queue (or updates its options) without working it here: a process that only enqueues (an API
   * process with RUN_JOBS=false) declares the queues the workers register, so its jobs have a queue to go to
   * before any worker has started. Same options as `register`, applied alike.
   */
  async declare<T>(name: string, opts: Omit<RegisterOptions<T>, 'concurrency'>): Promise<void> {
    checkQueueName(name);
    const { expireInSeconds, retryLimit = 2, retryDelaySeconds = 0, onFailed } = opts;
    if (!Number.isInteger(expireInSeconds) || expireInSeconds < 1 || expireInSeconds > MAX_EXPIRE_SECONDS) {
      throw misuse('expireInSeconds: whole seconds, at least 1 and less than 24 h');
    }
    if (!Number.isInteger(retryLimit) || retryLimit < 0) throw misuse('retryLimit: a whole number, at least 0');
    if (!Number.isInteger(retryDelaySeconds) || retryDelaySeconds < 0) {
      throw misuse('retryDelaySeconds: whole seconds, at least 0');
    }
    if (this.#registered.has(name)) throw misuse(`queue ${name} is already registered`);
    this.#registered.add(name);
    try {
      const deadLetter = onFailed ? failedQueueName(name) : undefined;
      await this.#setUpQueue({ name, expireInSeconds, retryLimit, retryDelay: retryDelaySeconds, deadLetter });
    } catch (err) {
      this.#registered.delete(name);
      throw err;
    }
  }

  /**
   * Creates the queue (or updates its options) and starts working it in this process. Options apply to jobs
   * enqueued from then on; the queue's settings are shared by every process, so register it alike everywhere.
   */
  async register<T>(name: string, handler: JobHandler<T>, opts: RegisterOptions<T>): Promise<void> {
    const { concurrency = 1, expireInSeconds, onFailed } = opts;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw misuse('concurrency: a whole number, at least 1');
    await this.declare(name, opts);
    this.#work(name, concurrency, {
      run: (job, signal) =>
        handler({ id: job.data.id, data: job.data.data as T, attempt: job.retryCount + 1, signal }),
      failureOutput: (_job, message) => ({ message }),
      deadlineSeconds: expireInSeconds,
    });
    if (onFailed) {
      this.#work(failedQueueName(name), 1, {
        run: async (job) => {
          try {
            await onFailed({ id: job.data.id, data: job.data.data as T }, failureMessage(job.output));
          } catch (err) {
            this.#onError(new Error(`onFailed of queue ${name} failed: ${errorMessage(err)}`, { cause: err }));
            throw err;
          }
        },
        // pg-boss stores the failure on the job it retries: keep the original reason for the next delivery.
        failureOutput: (job) => job.output ?? {},
        deadlineSeconds: DEAD_LETTER_DEADLINE_SECONDS,
      });
    }
  }

  async #setUpQueue(settings: QueueSettings): Promise<void> {
    const boss = await this.#started();
    const { name, deadLetter, ...rest } = settings;
    // Jobs are fetched with the stale threshold as their deadline; heartbeats move it on while they run.
    const expireInSeconds = Math.min(rest.expireInSeconds, this.#staleSeconds);
    // The dead-letter queue first: the queue's dead_letter column references it.
    if (deadLetter) {
      const dlq: PgBoss.Queue = { name: deadLetter, policy: 'standard', expireInSeconds: this.#staleSeconds };
      await boss.createQueue(deadLetter, dlq);
      await boss.updateQueue(deadLetter, dlq);
    }
    const queue: PgBoss.Queue = { name, policy: 'standard', retryBackoff: false, ...rest, expireInSeconds };
    if (deadLetter) queue.deadLetter = deadLetter;
    await boss.createQueue(name, queue); // a no-op when it exists …
    await boss.updateQueue(name, queue); // … so that changed options reach an existing queue
  }

  /**
   * Queues a job and returns its id; null when `singletonKey` is given and a job with that key is already queued,
   * waiting for a retry or running in this queue. The queue must have been registered (by any process). `data` is
   * stored as JSON.
   */
  async enqueue<T>(name: string, data: T, opts: EnqueueOptions = {}): Promise<string | null> {
    checkQueueName(name);
    const boss = await this.#started();
    const id = randomUUID();
    const envelope: Envelope = { id, data };
    const key = opts.singletonKey;
    let expired = 0;
    const sent =
      key === undefined
        ? await boss.send(name, envelope, { id, ...(opts.priority !== undefined ? { priority: opts.priority } : {}) })
        : await inTransaction(this.#pool!, async (db) => {
            await lockKey(db, this.#schema, name, key);
            // A job whose process died does not hold the key until maintenance comes by: expire it now.
            const dead = await lockExpiredJobs(db, this.#schema, name, key);
            for (const deadId of dead) await boss.fail(name, deadId, PG_BOSS_TIMEOUT_OUTPUT, { db });
            expired = dead.length;
            if (await findPendingJob(db, this.#schema, name, key)) return undefined;
            return boss.send(name, envelope, { id, singletonKey: key, db, ...(opts.priority !== undefined ? { priority: opts.priority } : {}) });
          });
    if (sent === undefined) {
      if (expired > 0) this.#workers.get(name)?.wake(); // its retry is due now
      return null;
    }
    // pg-boss inserts through a join with its queue table: no row means no such queue.
    if (sent === null) throw misuse(`queue ${name} does not exist; register it first`);
    this.#workers.get(name)?.wake();
    return sent;
  }

  /**
   * Each declared queue's backlog (dead-letter queues included; zeros when empty): jobs waiting (created or waiting
   * for a retry), jobs active, and the age of the oldest waiting job in seconds. One aggregate query; none before start.
   */
  async backlog(): Promise<{ queue: string; waiting: number; active: number; oldestSeconds: number }[]> {
    const pool = this.#pool;
    if (!pool || this.#stopping) return [];
    // Every declared queue, an empty one with zeros: a drained queue reads 0 rather than vanishing from the scrape.
    const r = await pool.query<{ name: string; waiting: number; active: number; oldest: number | null }>(
      `SELECT q.name, count(j.id) FILTER (WHERE j.state < 'active')::int AS waiting, count(j.id) FILTER (WHERE j.state = 'active')::int AS active,
              extract(epoch FROM now() - min(j.created_on) FILTER (WHERE j.state < 'active'))::float8 AS oldest
         FROM ${this.#schema}.queue q LEFT JOIN ${this.#schema}.job j ON j.name = q.name AND j.state <= 'active'
        GROUP BY q.name ORDER BY q.name`,
    );
    return r.rows.map((row) => ({ queue: row.name, waiting: row.waiting, active: row.active, oldestSeconds: Math.max(0, row.oldest ?? 0) }));
  }

  /** The job's state (archived jobs included), or null when this queue has no job with that id. */
  async getJob(name: string, id: string): Promise<JobState | null> {
    checkQueueName(name);
    const boss = await this.#started();
    if (!UUID.test(id)) return null;
    const job = await boss.getJobById(name, id, { includeArchive: true });
    return job?.state ?? null;
  }

  async #started(): Promise<PgBoss> {
    if (this.#stopping) throw misuse('the JobQueue is stopped');
    if (!this.#starting) throw misuse('the JobQueue is not started; call start() first');
    await this.#starting;
    return this.#boss!;
  }

  #work(name: string, concurrency: number, work: Work): void {
    const boss = this.#boss!;
    const worker = new QueueWorker<FetchedJob>({
      concurrency,
      pollingIntervalMs: this.#pollingIntervalMs,
      fetch: (limit) => boss.fetch<Envelope>(name, { batchSize: limit, includeMetadata: true }),
      execute: (job, interrupted) => this.#attempt(name, job, interrupted, work),
      onError: this.#onError,
      ...(this.#onPolled ? { onPolled: () => this.#onPolled?.(name) } : {}),
    });
    this.#workers.set(name, worker);
    if (this.#stopping) return; // stop() began while the queue was being created: do not start claiming
    worker.start();
  }

  /** Runs one attempt against its deadline, heartbeating while it runs, and settles it. */
  async #attempt(name: string, job: FetchedJob, interrupted: AbortSignal, work: Work): Promise<void> {
    const deadline = AbortSignal.timeout(work.deadlineSeconds * 1000);
    const superseded = new AbortController();
    const signal = AbortSignal.any([deadline, interrupted, superseded.signal]);
    const heartbeat = this.#heartbeat(name, job, work.deadlineSeconds, () => superseded.abort(new Error(SUPERSEDED_MESSAGE)));
    let failure: string | undefined;
    try {
      await untilAborted(Promise.resolve().then(() => work.run(job, signal)), signal);
    } catch (err) {
      failure = deadline.aborted
        ? deadlineMessage(work.deadlineSeconds)
        : interrupted.aborted
          ? INTERRUPTED_MESSAGE
          : superseded.signal.aborted
            ? SUPERSEDED_MESSAGE
            : errorMessage(err);
    } finally {
      await heartbeat.stop();
    }
    await this.#settle(name, job, failure === undefined ? undefined : work.failureOutput(job, failure), interrupted.aborted && !deadline.aborted);
  }

  /**
   * Beats at once (a job fetched before this version, or from a queue with a longer deadline, gets the stale
   * threshold now) and then every interval, one beat at a time. `lost` is called when the job is no longer this
   * attempt's. A failed beat is reported and tried again at the next interval.
   */
  #heartbeat(name: string, job: FetchedJob, deadlineSeconds: number, lost: () => void): { stop: () => Promise<void> } {
    const pool = this.#pool!;
    const db = { executeSql: (text: string, values?: unknown[]) => pool.query(text, values) };
    const ref = { name, id: job.id, retryCount: job.retryCount };
    const stale = Math.min(this.#staleSeconds, deadlineSeconds);
    let stopped = false;
    let inFlight: Promise<void> | undefined;
    const tick = () => {
      if (stopped || inFlight) return;
      inFlight = beat(db, this.#schema, ref, stale, deadlineSeconds)
        .then(
          (alive) => {
            if (!alive && !stopped) lost();
          },
          (err: Error) => {
            if (!stopped) this.#onError(new Error(`heartbeat of job ${job.id} failed: ${err.message}`, { cause: err }));
          },
        )
        .finally(() => {
          inFlight = undefined;
        });
    };
    tick();
    const timer = setInterval(tick, this.#heartbeatIntervalMs);
    timer.unref();
    return {
      stop: async () => {
        stopped = true;
        clearInterval(timer);
        await inFlight;
      },
    };
  }

  /** Completes the attempt, or fails it with `failure` as its output; only while it is still this attempt. */
  async #settle(name: string, job: FetchedJob, failure: object | undefined, interrupted = false): Promise<void> {
    const boss = this.#boss!;
    try {
      await inTransaction(this.#pool!, async (db) => {
        if (!(await lockOwnAttempt(db, this.#schema, name, job.id, job.retryCount))) return;
        // Cut by this process's shutdown: retried elsewhere without using up one of the job's attempts.
        if (failure !== undefined && interrupted) await grantExtraAttempt(db, this.#schema, name, job.id);
        if (failure === undefined) await boss.complete(name, job.id, {}, { db });
        else await boss.fail(name, job.id, failure, { db });
      });
    } catch (err) {
      // The attempt stays active; maintenance expires it after its deadline and it is retried.
      this.#onError(err as Error);
    }
  }
}

function checkQueueName(name: string): void {
  if (!QUEUE_NAME.test(name) || name.endsWith('__failed')) {
    throw misuse(`queue name ${JSON.stringify(name)}: letters, digits, _ . - (at most 100), not ending in __failed`);
  }
}

/** Settles with `work`, or rejects as soon as `signal` aborts (the work goes on, unobserved but handled). */
function untilAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
