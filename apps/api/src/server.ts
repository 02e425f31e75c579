import { createDb, migrateToLatest, startEmbeddedPostgres } from '@wds/db';
import { createJwtVerifier } from '@wds/identity';
import { onRoundTripMismatch } from '@wds/sql-rewriter';
import { InvalidationBus, TopicCache } from '@wds/cache';
import { SecretBox } from '@wds/crypto';
import type { DockerRuntime } from '@wds/stf-runtime';
import { type ServerType, serve } from '@hono/node-server';
import { join, resolve } from 'node:path';
import { loadOrCreateAdminToken } from './admin-token-file.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { OutboundGuard } from '@wds/effect-runner';
import { createBlobStore } from './blob-store.js';
import { createRuntimes } from './runtimes.js';
import { Background } from './background.js';
import { createEmbeddings } from './embeddings-config.js';
import { createProviders } from './providers-config.js';
import { handleDriveSyncJobs } from './drive-sync-work.js';
import { handleEmbeddingJobs } from './embedding-work.js';
import { createWorkspaceSql } from './workspace-sql-config.js';
import type { Services } from './services.js';

export interface RunningServer {
  url: string;
  services: Services;
  close(): Promise<void>;
}

/** Start-up: database (given or embedded) → migrations → admin token → HTTP listener. */
export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const dataDir = resolve(config.DATA_DIR);
  let databaseUrl = config.DATABASE_URL;
  let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  if (!databaseUrl) {
    logger.info({ data_dir: dataDir }, 'no DATABASE_URL: starting the embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({ dataDir });
    databaseUrl = embedded.url;
  }
  // A statement the rewriter refused because its printed form did not read back unchanged: a deparser gap to fix.
  onRoundTripMismatch(({ path, executed }) =>
    logger.warn({ path, executed: executed.slice(0, 500), length: executed.length }, 'rewritten SQL did not parse back unchanged; refused'),
  );
  const { db, pool } = createDb(databaseUrl, { max: config.DB_POOL_MAX });
  try {
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
  const runtimes = createRuntimes(config);
  const docker = runtimes.docker as DockerRuntime | undefined;
  if (docker) {
    await docker.ping().then(
      (v) => logger.info({ docker_host: config.DOCKER_HOST, engine: v.version, api: v.apiVersion }, 'container engine reachable'),
      (err: Error) => logger.warn({ docker_host: config.DOCKER_HOST, err: err.message }, 'container engine not reachable: docker STFs answer 503 until it is'),
    );
  }
  const outbound = new OutboundGuard({ allowlist: config.OUTBOUND_ALLOWLIST });
  const blobs = createBlobStore(config, dataDir);
  const services: Services = {
    db,
    pool,
    jobs: new Background({ connectionString: databaseUrl, pollIntervalMs: config.JOB_POLL_INTERVAL_MS, logger }),
    embeddings: await createEmbeddings(config, db),
    providers: createProviders(config, { db, secrets, blobs, outbound }),
    sql: createWorkspaceSql(pool, databaseUrl, config, bus, logger),
    secrets,
    runtimes,
    outbound,
    blobs,
    bus,
    caches: { principals: new TopicCache(bus, ttl), access: new TopicCache(bus, ttl) },
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
  handleEmbeddingJobs(services);
  handleDriveSyncJobs(services);
  // Jobs left by an earlier run (or another process) are picked up from here on.
  await services.jobs.start();
  const app = createApp(services);
  const server: ServerType = await new Promise((ok) => {
    const s = serve({ fetch: app.fetch, hostname: config.HOST, port: config.PORT }, () => ok(s));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  logger.info({ url, data_dir: embedded ? dataDir : undefined }, 'listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      // Stop accepting, let in-flight requests finish (bounded), then release the database.
      await new Promise<void>((done) => {
        const timer = setTimeout(() => {
          (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          done();
        }, config.SHUTDOWN_TIMEOUT_MS);
        server.close(() => {
          clearTimeout(timer);
          done();
        });
        (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      });
      await services.jobs.stop();
      await Promise.all(Object.values(services.runtimes).map((r) => r?.close()));
      await services.sql.close();
      await bus.stop();
      await db.destroy();
      await embedded?.stop();
    })());
  return { url, services, close };
}

