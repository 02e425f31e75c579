/**
 * The service's Prometheus metrics: one registry per service instance (never prom-client's global default, so
 * several app instances in one process — tests — keep their own counts), the metric definitions, and the small
 * recording functions the app and packages call. Packages that record take an optional structural hook (a method
 * of this class) rather than a dependency on this package; docs/metrics.md lists every metric.
 *
 * Labels stay bounded: operation names, status codes, error codes of the closed set, runtimes, outcomes, queue and
 * pool names. Never a workspace, user, run or request id, and never a raw path.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How a workspace statement is counted: reads, writes (insert, update, delete) and schema changes. */
export type SqlKind = 'read' | 'write' | 'ddl';

/** A pg Pool's counts (pg.Pool has these as properties). */
export interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** One job queue's backlog at collect time. */
export interface QueueStat {
  queue: string;
  /** Jobs waiting to run (created or waiting for a retry). */
  waiting: number;
  /** Jobs being worked. */
  active: number;
  /** Age of the oldest waiting job in seconds; 0 when none waits. */
  oldestSeconds: number;
}

export interface MetricsOptions {
  /** prom-client's process metrics (CPU, memory, event loop lag, GC, handles) on this registry; default true. */
  defaultMetrics?: boolean;
}

/** Seconds buckets of request and statement latency: 5 ms … 30 s. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds buckets of STF and workflow runs: 10 ms … 5 min. */
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** A label value for something that should be one of a few words: anything else becomes `other`. */
const word = (s: string): string => (/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(s) ? s : 'other');

export class Metrics {
  readonly registry: Registry;
  readonly #httpRequests: Counter<'operation' | 'status'>;
  readonly #httpDuration: Histogram<'operation'>;
  readonly #sqlDuration: Histogram<'kind'>;
  readonly #sqlRejections: Counter<'code'>;
  readonly #stfRuns: Counter<'runtime' | 'outcome'>;
  readonly #stfDuration: Histogram<'runtime' | 'outcome'>;
  readonly #workflowRuns: Counter<'status'>;
  readonly #workflowDuration: Histogram<'status'>;
  readonly #embeddingTexts: Counter<'embedder'>;
  readonly #embeddingDuration: Histogram<'embedder'>;
  readonly #pools = new Map<string, () => PoolCounts>();
  #queues: (() => Promise<QueueStat[]>) | undefined;

  constructor(opts: MetricsOptions = {}) {
    const registry = new Registry();
    this.registry = registry;
    const registers = [registry];
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });

    this.#httpRequests = new Counter({
      name: 'wds_http_requests_total',
      help: 'HTTP requests answered, by declared operation and status code',
      labelNames: ['operation', 'status'],
      registers,
    });
    this.#httpDuration = new Histogram({
      name: 'wds_http_request_duration_seconds',
      help: 'Time from receiving a request to its answer, by declared operation',
      labelNames: ['operation'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#sqlDuration = new Histogram({
      name: 'wds_sql_statement_duration_seconds',
      help: 'Workspace SQL statements that ran, by kind (read, write, ddl): rewrite, wait for a connection and execution',
      labelNames: ['kind'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#sqlRejections = new Counter({
      name: 'wds_sql_rejections_total',
      help: 'Workspace SQL statements refused or failed, by error code',
      labelNames: ['code'],
      registers,
    });
    this.#stfRuns = new Counter({
      name: 'wds_stf_runs_total',
      help: 'STF runs by runtime and outcome (success, a failure kind, or busy / unavailable / error when it did not run)',
      labelNames: ['runtime', 'outcome'],
      registers,
    });
    this.#stfDuration = new Histogram({
      name: 'wds_stf_run_duration_seconds',
      help: 'Wall-clock time of STF runs (waiting for a worker included), by runtime and outcome',
      labelNames: ['runtime', 'outcome'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.#workflowRuns = new Counter({
      name: 'wds_workflow_runs_total',
      help: 'Workflow runs finished, by status (succeeded, failed)',
      labelNames: ['status'],
      registers,
    });
    this.#workflowDuration = new Histogram({
      name: 'wds_workflow_run_duration_seconds',
      help: 'Time of finished workflow runs, by status',
      labelNames: ['status'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.#embeddingTexts = new Counter({
      name: 'wds_embedding_texts_total',
      help: 'Texts (chunks, queries) turned into vectors, by embedder',
      labelNames: ['embedder'],
      registers,
    });
    this.#embeddingDuration = new Histogram({
      name: 'wds_embedding_batch_duration_seconds',
      help: 'Time of one embedder call (a batch of texts), by embedder',
      labelNames: ['embedder'],
      buckets: RUN_BUCKETS,
      registers,
    });

    const pools = this.#pools;
    new Gauge({
      name: 'wds_db_pool_connections',
      help: 'Connections of a database pool at collect time, by pool and state (open, idle)',
      labelNames: ['pool', 'state'],
      registers,
      collect() {
        this.reset();
        for (const [pool, counts] of pools) {
          const c = counts();
          this.set({ pool, state: 'open' }, c.totalCount);
          this.set({ pool, state: 'idle' }, c.idleCount);
        }
      },
    });
    new Gauge({
      name: 'wds_db_pool_waiting_clients',
      help: 'Callers waiting for a connection of a database pool at collect time',
      labelNames: ['pool'],
      registers,
      collect() {
        this.reset();
        for (const [pool, counts] of pools) this.set({ pool }, counts().waitingCount);
      },
    });

    // One query of the job table serves the three queue gauges of a scrape.
    let pending: Promise<QueueStat[]> | undefined;
    const queueStats = (): Promise<QueueStat[]> => {
      const source = this.#queues;
      if (!source) return Promise.resolve([]);
      pending ??= source()
        .catch(() => [])
        .finally(() => setTimeout(() => (pending = undefined), 0));
      return pending;
    };
    const queueGauge = (name: string, help: string, pick: (s: QueueStat) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['queue'],
        registers,
        async collect() {
          const stats = await queueStats();
          this.reset();
          for (const s of stats) this.set({ queue: s.queue }, pick(s));
        },
      });
    queueGauge('wds_job_queue_depth', 'Background jobs waiting to run, by queue', (s) => s.waiting);
    queueGauge('wds_job_queue_active', 'Background jobs being worked, by queue', (s) => s.active);
    queueGauge('wds_job_queue_oldest_age_seconds', 'Age of the oldest waiting background job, by queue (0: none waits)', (s) => s.oldestSeconds);
  }

  /** One answered HTTP request: the route's declared operation (or a fixed name), never a raw path. */
  httpRequest(operation: string, status: number, seconds: number): void {
    const op = word(operation);
    this.#httpRequests.inc({ operation: op, status: String(Math.trunc(status)) });
    this.#httpDuration.observe({ operation: op }, seconds);
  }

  /** One workspace statement that ran (its kind as the rewriter found it). */
  sqlStatement(kind: SqlKind, seconds: number): void {
    this.#sqlDuration.observe({ kind }, seconds);
  }

  /** One workspace statement refused (policy, parse, DDL, limits) or failed, by the error code it answered with. */
  sqlRejected(code: string): void {
    this.#sqlRejections.inc({ code: word(code) });
  }

  /** One STF run: `outcome` is `success`, the failure kind, or why it did not run. */
  stfRun(runtime: string, outcome: string, seconds: number): void {
    const labels = { runtime: word(runtime), outcome: word(outcome) };
    this.#stfRuns.inc(labels);
    this.#stfDuration.observe(labels, seconds);
  }

  /** One finished workflow run. */
  workflowRun(status: string, seconds: number): void {
    const labels = { status: word(status) };
    this.#workflowRuns.inc(labels);
    this.#workflowDuration.observe(labels, seconds);
  }

  /** One embedder call of `texts` texts. */
  embedded(embedder: string, texts: number, seconds: number): void {
    const labels = { embedder: word(embedder) };
    this.#embeddingTexts.inc(labels, texts);
    this.#embeddingDuration.observe(labels, seconds);
  }

  /** Reports a pool's counts at each scrape (`pg.Pool` fits as it is); a second call with the name replaces it. */
  watchPool(name: string, pool: PoolCounts | (() => PoolCounts)): void {
    this.#pools.set(word(name), typeof pool === 'function' ? pool : () => pool);
  }

  /** Reports the job queues' backlog at each scrape (one cheap query; a failure reports none). */
  watchQueues(stats: () => Promise<QueueStat[]>): void {
    this.#queues = stats;
  }

  /** The Content-Type of `render()`. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in the Prometheus text format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/** The error codes a rejected statement may be labelled with are the service's closed set; `code` of anything else. */
export const errorCodeOf = (err: unknown): string => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z_]{0,63}$/.test(code) ? code : 'INTERNAL_ERROR';
};
