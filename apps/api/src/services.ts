import type { InvalidationBus, TopicCache } from '@wds/cache';
import type { SecretBox } from '@wds/crypto';
import type { Db } from '@wds/db';
import type { Principal } from '@wds/identity';
import type { WorkspaceAccess } from '@wds/workspaces';
import type { RuntimeName, StfRuntime } from '@wds/stf-runtime';
import type { WorkspaceSql } from '@wds/workspace-sql';
import type { WorkflowExecutions } from '@wds/workflows';
import type { JwtVerifier } from '@wds/identity';
import type { OutboundGuard } from '@wds/effect-runner';
import type { BlobStore } from '@wds/storage';
import type { SearchEmbedder } from '@wds/semantic-search';
import type { ExactVectorIndex } from '@wds/embeddings';
import type { BackgroundJobs } from '@wds/jobs';
import type { Metrics } from '@wds/metrics';
import type pg from 'pg';
import type { Config } from './config.js';
import type { RateLimits } from './http/rate-limit.js';
import type { ProviderServices } from './providers-config.js';
import type { Logger } from './logger.js';

/** Everything a route needs, built once at start-up (and once per test file). */
export interface Services {
  db: Db;
  /** The service's database (the embedded one's URL when DATABASE_URL is unset): dedicated LISTEN connections. */
  databaseUrl: string;
  /** The pool under `db`, for queries with hand-built SQL (vector search). */
  pool: pg.Pool;
  /** Runs workspace SQL through the rewriter and policies. */
  sql: WorkspaceSql;
  config: Config;
  logger: Logger;
  jwt: JwtVerifier | undefined;
  /** The admin interface is disabled when undefined. */
  adminToken: string | undefined;
  /** STF runtimes by name; a missing one answers 503. */
  runtimes: Partial<Record<RuntimeName, StfRuntime>>;
  /** Where file bytes live (filesystem under DATA_DIR, or S3). */
  blobs: BlobStore;
  /** The SSRF guard of every outbound call (effects, Fetch sources, providers); OUTBOUND_ALLOWLIST. */
  outbound: OutboundGuard;
  /** Seals STF secrets (and provider credentials); undefined when no key is configured. */
  secrets: SecretBox | undefined;
  /** The PostgreSQL job queue of background work (embeddings, drive syncs). */
  jobs: BackgroundJobs;
  /** The configured embedder (EMBEDDER), whether vectors are stored with pgvector, and the exact searches' index. */
  embeddings: { embedder: SearchEmbedder; pgvector: boolean; index: ExactVectorIndex };
  /** Provider calls on a workspace's behalf (SaaS proxy) and its drive sync. */
  providers: ProviderServices;
  /** Invalidation across processes (LISTEN/NOTIFY) for the caches below. */
  bus: InvalidationBus;
  /** Drops a cache topic in every process: NOTIFY on the bus's channel for the others, and at once here. */
  invalidateEverywhere: (topic: string) => Promise<void>;
  /**
   * The process's request budgets (docs/http-api.md#rate-limits): one set, charged by the HTTP routes, MCP and the
   * WebSocket upgrade alike, so a credential guessed at through one of them counts against the others.
   */
  rateLimits: RateLimits;
  /** This instance's Prometheus registry and recording functions (docs/metrics.md); STF and workflow runs record here. */
  metrics: Metrics;
  caches: {
    /** By token hash; topic `user:<id>`. */
    principals: TopicCache<Principal>;
    /** By user, scope and workspace; topic `ws:<id>`. */
    access: TopicCache<WorkspaceAccess>;
  };
  /**
   * What STF and workflow runs read of the platform tables (versions with their sealed secrets, workflows), by
   * workspace (@wds/stfs createRunCache); undefined with CACHE_TTL_MS 0.
   */
  runCache: TopicCache | undefined;
  /** The workflow executions of this process: one heartbeat for its runs, the per-workspace cap, its runs to cancel. */
  executions: WorkflowExecutions;
}
