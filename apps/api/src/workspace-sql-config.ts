import type { InvalidationBus } from '@wds/cache';
import type { Metrics } from '@wds/metrics';
import { WorkspaceSql } from '@wds/workspace-sql';
import type pg from 'pg';
import type { Config } from './config.js';
import type { Logger } from './logger.js';

/** User SQL: per-workspace LOGIN roles on `databaseUrl`'s server, with the pool and byte limits of the configuration. */
export const createWorkspaceSql = (
  pool: pg.Pool,
  databaseUrl: string,
  config: Config,
  bus: InvalidationBus,
  logger: Logger,
  metrics?: Metrics,
): WorkspaceSql =>
  new WorkspaceSql(pool, {
    databaseUrl,
    roleSecret: config.SQL_ROLE_SECRET ?? config.SECRETS_KEY,
    bus,
    contextTtlMs: config.CACHE_TTL_MS,
    pools: {
      maxTotal: config.SQL_POOL_MAX,
      maxPerWorkspace: config.SQL_WORKSPACE_CONNECTIONS,
      maxPerWorkspaceShared: config.SQL_WORKSPACE_CONNECTIONS_SHARED ?? Math.max(1, Math.floor(config.SQL_WORKSPACE_CONNECTIONS / 2)),
      maxQueuePerWorkspace: config.SQL_WORKSPACE_QUEUE,
      acquireTimeoutMs: config.SQL_ACQUIRE_TIMEOUT_MS,
    },
    budget: { maxRowBytes: config.SQL_MAX_ROW_BYTES, maxResponseBytes: config.SQL_MAX_RESPONSE_BYTES },
    statementTimeoutMs: config.SQL_STATEMENT_TIMEOUT_MS,
    onAfterCommitError: (err, statement) =>
      logger.error({ err, ...statement }, statement.kind === 'ddl' ? 'a committed schema change was not announced to other processes' : 'a committed read has no audit entry'),
    onAuditError: (err, statement) => logger.error({ err, ...statement }, 'a statement was rolled back: its audit entry could not be written'),
    ...(metrics ? { metrics } : {}),
  });
