/**
 * What every process of the service opens before it does its job (the API's HTTP listener, the worker's jobs):
 * the database (given or embedded) with migrations applied, secrets, the cache bus, runtimes and blob store, as one
 * `Services`; and the background work (job handlers, job queue, maintenance sweeps) a process may run.
 */
import { createDb, migrateToLatest, notifyOnCommit, type RunningEmbeddedPostgres, startEmbeddedPostgres } from '@wds/db';
import { createJwtVerifier } from '@wds/identity';
import { onRoundTripMismatch } from '@wds/sql-rewriter';
import { CHANNEL, InvalidationBus, TopicCache } from '@wds/cache';
import { SecretBox } from '@wds/crypto';
import type { DockerRuntime } from '@wds/stf-runtime';
import { OutboundGuard } from '@wds/effect-runner';
import { handleDriveSyncJobs } from '@wds/drive-sync';
import { BackgroundJobs } from '@wds/jobs';
import { Metrics } from '@wds/metrics';
import { handleEmbeddingJobs } from '@wds/semantic-search';
import { createRunCache } from '@wds/stfs';
import { handleWorkflowRunJobs, WorkflowExecutions } from '@wds/workflows';
import { join, resolve } from 'node:path';
import { loadOrCreateAdminToken } from './admin-token-file.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { createBlobStore } from './blob-store.js';
import { createRuntimes } from './runtimes.js';
import { createEmbeddings } from './embeddings-config.js';
import { createProviders } from './providers-config.js';
import { startMaintenance } from './maintenance-work.js';
import { createWorkspaceSql } from './workspace-sql-config.js';
import type { Services } from './services.js';
import { RateLimits } from './http/rate-limit.js';

export interface OpenedServices {
  services: Services;
  /** Set when no DATABASE_URL was given: the embedded server under DATA_DIR. */
  embedded: RunningEmbeddedPostgres | undefined;
  dataDir: string;
  /** Closes everything, the embedded database last; each step runs even if one before it failed. */
  close(): Promise<void>;
}

/** How long one shutdown step may take before the next one starts anyway. */
const STEP_LIMIT_MS = 30_000;

/**
 * Runs `work` and logs (instead of throwing) its failure; gives up waiting after `limitMs`: a shutdown goes on past
 * a step that failed or hangs, so the embedded database is always stopped at the end.
 */
export function shutdownStep(logger: Logger, what: string, work: () => Promise<unknown> | undefined, limitMs = STEP_LIMIT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((done) => {
    timer = setTimeout(() => {
      logger.warn({ step: what, limit_ms: limitMs }, `shutdown: ${what} did not finish in time; going on`);
      done();
    }, limitMs);
  });
  const done = Promise.resolve()
    .then(work)
    .then(
      () => undefined,
      (err) => logger.warn({ err }, `shutdown: ${what} failed`),
    );
  return Promise.race([done, gaveUp]).finally(() => clearTimeout(timer));
}

export interface OpenOptions {
  /** This process works the job queues (an API process with RUN_JOBS=true, a worker); else it only declares them. */
  runJobs: boolean;
  /** Start the job queue now (default) or on the first enqueue (the test harness: most test files queue nothing). */
  startJobs?: boolean;
  /** STF runtime sizing other than the configuration's (the test harness: one worker, none started ahead). */
  runtimes?: { jsWorkers?: number; prewarm?: boolean };
}

/** The one assembly of `Services`, for the API, the worker and the test harness. */
export async function openServices(config: Config, logger: Logger, opts: OpenOptions): Promise<OpenedServices> {
  const dataDir = resolve(config.DATA_DIR);
  let databaseUrl = config.DATABASE_URL;
  let embedded: RunningEmbeddedPostgres | undefined;
  if (!databaseUrl) {
    logger.info({ data_dir: dataDir }, 'no DATABASE_URL: starting the embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({
      dataDir,
      port: config.EMBEDDED_PG_PORT,
      backendMemoryBytes: config.EMBEDDED_PG_BACKEND_MEMORY_MB * 1024 * 1024,
      log: (msg) => logger.debug({ postgres: msg }, 'embedded PostgreSQL output'),
      notify: (level, msg, fields) => logger[level]({ data_dir: dataDir, ...fields }, msg),
    });
    databaseUrl = embedded.url;
    logger.info({ port: embedded.port }, 'embedded PostgreSQL running on 127.0.0.1');
  }
  // A statement the rewriter refused because its printed form did not read back unchanged: a deparser gap to fix.
  onRoundTripMismatch(({ path, executed }) =>
    logger.warn({ path, executed: executed.slice(0, 500), length: executed.length }, 'rewritten SQL did not parse back unchanged; refused'),
  );
  const { db, pool } = createDb(databaseUrl, { max: config.DB_POOL_MAX });
  try {
    // Several processes may start at once: the migrator holds a lock while it applies.
    const applied = await migrateToLatest(db);
    if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
  } catch (err) {
    await db.destroy();
    await embedded?.stop();
    throw err;
  }

  let adminToken = config.ADMIN_TOKEN;
  if (!adminToken && embedded) {
    const t = await loadOrCreateAdminToken(dataDir);
    adminToken = t.token;
    logger.info({ path: t.path }, t.created ? 'admin token generated' : 'admin token loaded');
  } else if (!adminToken) {
    logger.warn('ADMIN_TOKEN is not set: the admin interface (/admin/v1) is disabled');
  }

  let secrets = config.SECRETS_KEY ? SecretBox.fromBase64(config.SECRETS_KEY) : undefined;
  if (!secrets && embedded) {
    const k = await SecretBox.fromFile(join(dataDir, 'secrets-key'));
    secrets = k.box;
    logger.info({ path: join(dataDir, 'secrets-key') }, k.created ? 'secrets key generated' : 'secrets key loaded');
  } else if (!secrets) {
    logger.warn('SECRETS_KEY is not set: STF secrets cannot be stored');
  }
  const bus = new InvalidationBus(databaseUrl, (msg, err) => logger.warn({ err }, msg));
  await bus.start();
  const ttl = config.CACHE_TTL_MS;
  const outbound = new OutboundGuard({ allowlist: config.OUTBOUND_ALLOWLIST });
  const runtimes = createRuntimes(config, { ...opts.runtimes, outbound });
  const docker = runtimes.docker as DockerRuntime | undefined;
  if (docker) {
    await docker.ping().then(
      (v) => logger.info({ docker_host: config.DOCKER_HOST, engine: v.version, api: v.apiVersion }, 'container engine reachable'),
      (err: Error) => logger.warn({ docker_host: config.DOCKER_HOST, err: err.message }, 'container engine not reachable: docker STFs answer 503 until it is'),
    );
  }
  const blobs = createBlobStore(config, dataDir);
  // One registry per instance (docs/metrics.md): several harnesses in one test process keep their own counts.
  const metrics = new Metrics();
  const base: Omit<Services, 'executions'> = {
    db,
    databaseUrl,
    pool,
    jobs: new BackgroundJobs({ connectionString: databaseUrl, pollIntervalMs: config.JOB_POLL_INTERVAL_MS, logger, work: opts.runJobs }),
    embeddings: await createEmbeddings(config, db, { pool, logger, metrics }),
    providers: createProviders(config, { db, secrets, blobs, outbound }),
    sql: createWorkspaceSql(pool, databaseUrl, config, bus, logger, metrics),
    metrics,
    rateLimits: new RateLimits(config),
    secrets,
    runtimes,
    outbound,
    blobs,
    bus,
    invalidateEverywhere: async (topic) => {
      await notifyOnCommit(db, CHANNEL, topic);
      bus.invalidate(topic);
    },
    caches: { principals: new TopicCache(bus, { ttlMs: ttl }), access: new TopicCache(bus, { ttlMs: ttl }) },
    runCache: createRunCache(bus, ttl),
    config,
    logger,
    jwt: createJwtVerifier({
      jwksUrl: config.AUTH_JWKS_URL,
      secret: config.AUTH_JWT_SECRET,
      issuer: config.AUTH_JWT_ISSUER,
      audience: config.AUTH_JWT_AUDIENCE,
    }),
    adminToken,
  };
  // The executions read the services they are part of (runtimes, SQL, the run cache): one object, built once.
  const services: Services = Object.assign(base, { executions: new WorkflowExecutions(base) });

  // The queues exist from here on in every process (declared, or worked when runJobs); jobs left by an earlier run
  // or another process are picked up by the processes that work them.
  handleEmbeddingJobs(services);
  handleDriveSyncJobs(services);
  handleWorkflowRunJobs(services);
  metrics.watchPool('service', pool);
  metrics.watchPool('workspace_sql', () => services.sql.poolCounts());
  metrics.watchQueues(() => services.jobs.backlog());
  try {
    if (opts.startJobs ?? true) await services.jobs.start();
  } catch (err) {
    await closeAll(services, embedded, logger);
    throw err;
  }
  return { services, embedded, dataDir, close: once(() => closeAll(services, embedded, logger)) };
}

const once = (f: () => Promise<void>) => {
  let p: Promise<void> | undefined;
  return () => (p ??= f());
};

async function closeAll(services: Services, embedded: RunningEmbeddedPostgres | undefined, logger: Logger): Promise<void> {
  const step = (what: string, work: () => Promise<unknown> | undefined) => shutdownStep(logger, what, work);
  await step('job queue', () => services.jobs.stop());
  await step('STF runtimes', () => Promise.all(Object.values(services.runtimes).map((r) => r?.close())));
  await step('workspace SQL', () => services.sql.close());
  await step('vector index', () => services.embeddings.index.close());
  await step('cache bus', () => services.bus.stop());
  await step('service pool', () => services.db.destroy());
  await step('embedded PostgreSQL', () => embedded?.stop());
}

export interface BackgroundWork {
  /** Stops the sweeps and the job queue's handlers, waiting (bounded) for the jobs in progress. */
  stop(): Promise<void>;
}

/**
 * The rest of what a process that runs background work does besides working the queues (`openServices` with
 * runJobs): the maintenance sweeps. `stop()` ends both before the services are closed.
 */
export function startBackgroundWork(services: Services): BackgroundWork {
  const maintenance = startMaintenance(services);
  return {
    async stop() {
      await shutdownStep(services.logger, 'maintenance', () => maintenance.stop());
      await shutdownStep(services.logger, 'job queue', () => services.jobs.stop());
    },
  };
}
