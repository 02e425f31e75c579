import { parseAllowlist } from '@wds/effect-runner';
import * as v from 'valibot';
import { type CorsOrigins, parseCorsOrigins } from './http/cors.js';
import { parseConsoleUrl } from './login-page.js';

const int = (def: number, min: number, max: number) =>
  v.optional(
    v.pipe(v.string(), v.trim(), v.toNumber(), v.integer(), v.minValue(min), v.maxValue(max)),
    String(def),
  );
const opt = v.optional(v.pipe(v.string(), v.trim(), v.nonEmpty()));
const url = v.optional(v.pipe(v.string(), v.trim(), v.url()));

/** `scheme://host[:port]` (http or https), a trailing `/` forgiven: nothing else. */
function isOrigin(value: string): boolean {
  try {
    const u = new URL(value);
    const bare = u.pathname === '/' && !value.includes('?') && !value.includes('#');
    return (u.protocol === 'http:' || u.protocol === 'https:') && bare && !u.username && !u.password;
  } catch {
    return false;
  }
}

/** Every setting the service reads, with its default. README's configuration table mirrors this. */
export const ConfigSchema = v.object({
  HOST: v.optional(v.string(), '127.0.0.1'),
  PORT: int(8080, 0, 65535),
  DATA_DIR: v.optional(v.string(), './.data'),
  DATABASE_URL: opt,
  // Unset: the port remembered in DATA_DIR/postgres-port (chosen free on the first start).
  EMBEDDED_PG_PORT: v.optional(v.pipe(v.string(), v.trim(), v.toNumber(), v.integer(), v.minValue(1), v.maxValue(65535))),
  // RLIMIT_DATA of each embedded PostgreSQL process (0: none); see docs/operations.md.
  EMBEDDED_PG_BACKEND_MEMORY_MB: int(1024, 0, 1_048_576),
  DB_POOL_MAX: int(10, 1, 1000),
  ADMIN_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, 'ADMIN_TOKEN must have at least 16 characters'))),
  AUTH_JWKS_URL: url,
  AUTH_JWT_SECRET: v.optional(v.pipe(v.string(), v.minLength(32, 'AUTH_JWT_SECRET must have at least 32 characters'))),
  AUTH_JWT_ISSUER: opt,
  AUTH_JWT_AUDIENCE: opt,
  AUTH_TOKEN_URL: url,
  AUTH_CLIENT_ID: opt,
  AUTH_CLIENT_SECRET: opt,
  // The authorization server's authorization endpoint: with it the console offers the authorization-code flow
  // (docs/console.md#signing-in), redirect URI <CONSOLE_URL>/console/callback (https, as the exchange requires).
  AUTH_AUTHORIZE_URL: url,
  AUTH_SCOPE: v.optional(v.pipe(v.string(), v.trim(), v.nonEmpty(), v.maxLength(1000)), 'openid email profile'),
  SESSION_TTL_SECONDS: int(30 * 24 * 3600, 60, 365 * 24 * 3600),
  // The base URL the console is reached under: login links point at its /console/login page (login-page.ts).
  // The console at /console/ (docs/console.md); false: not served, and GET / answers 404.
  CONSOLE_ENABLED: v.optional(v.pipe(v.picklist(['true', 'false', '1', '0']), v.transform((s) => s === 'true' || s === '1')), 'true'),
  CONSOLE_URL: v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        try {
          return parseConsoleUrl(dataset.value);
        } catch (err) {
          addIssue({ message: `CONSOLE_URL: ${(err as Error).message}` });
          return NEVER;
        }
      }),
    ),
  ),
  // The origin clients reach the API under (OAuth discovery names it: docs/http-api.md#oauth-discovery); unset: the
  // origin each request was sent to (its Host). Set it behind a proxy that terminates TLS or rewrites the host.
  PUBLIC_URL: v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.check(isOrigin, 'PUBLIC_URL must be an origin: http(s)://host[:port], no path, query or credentials'),
      v.transform((s) => new URL(s).origin),
    ),
  ),
  MAX_BODY_BYTES: int(10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  // MCP (docs/mcp.md): one JSON-RPC request body (an upload's base64 counts), one tool result's text before it is
  // cut with a note on how to page, and the open sessions of this process (each user at most a tenth of them).
  MCP_MAX_BODY_BYTES: int(32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  MCP_MAX_RESULT_BYTES: int(1024 * 1024, 1024, 64 * 1024 * 1024),
  MCP_MAX_SESSIONS: int(1000, 10, 1_000_000),
  MCP_SESSION_IDLE_SECONDS: int(1800, 10, 7 * 24 * 3600),
  // The longest a tool call may take on this deployment, whatever a workspace's mcp_timeout_ms says.
  MCP_MAX_TIMEOUT_MS: int(3_600_000, 100, 3_600_000),
  SHUTDOWN_TIMEOUT_MS: int(10_000, 0, 600_000),
  // false: this API process only enqueues background jobs; worker processes (apps/worker) run them and the sweeps.
  RUN_JOBS: v.optional(v.pipe(v.picklist(['true', 'false', '1', '0']), v.transform((s) => s === 'true' || s === '1')), 'true'),
  // Prometheus metrics at /metrics (docs/metrics.md): off unless one is set. The token guards /metrics on PORT
  // (Bearer, compared in constant time); METRICS_PORT serves it on its own listener on HOST, without a token.
  METRICS_TOKEN: v.optional(v.pipe(v.string(), v.trim(), v.minLength(16, 'METRICS_TOKEN must have at least 16 characters'))),
  METRICS_PORT: v.optional(v.pipe(v.string(), v.trim(), v.toNumber(), v.integer(), v.minValue(0), v.maxValue(65535))),
  SQL_STATEMENT_TIMEOUT_MS: int(10_000, 10, 3_600_000),
  SQL_MAX_ROWS: int(10_000, 1, 1_000_000),
  // Seconds a stored SQL proposal waits for a decision before it expires (docs/approvals.md).
  SQL_PROPOSAL_TTL: int(24 * 3600, 60, 30 * 24 * 3600),
  // Days a decided or expired proposal is kept before the maintenance sweep forgets it.
  SQL_PROPOSAL_RETENTION_DAYS: int(90, 1, 3650),
  SQL_MAX_ROW_BYTES: int(16 * 1024 * 1024, 1024, 256 * 1024 * 1024),
  SQL_MAX_RESPONSE_BYTES: int(64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  SQL_POOL_MAX: int(20, 1, 1000),
  SQL_WORKSPACE_CONNECTIONS: int(4, 1, 100),
  // Unset: half of SQL_WORKSPACE_CONNECTIONS (at least 1). What a workspace may hold while others use SQL too.
  SQL_WORKSPACE_CONNECTIONS_SHARED: v.optional(v.pipe(v.string(), v.trim(), v.toNumber(), v.integer(), v.minValue(1), v.maxValue(100))),
  SQL_WORKSPACE_QUEUE: int(64, 0, 10_000),
  SQL_ACQUIRE_TIMEOUT_MS: int(30_000, 100, 600_000),
  SQL_ROLE_SECRET: v.optional(v.pipe(v.string(), v.minLength(16, 'SQL_ROLE_SECRET must have at least 16 characters'))),
  SECRETS_KEY: v.optional(v.pipe(v.string(), v.trim(), v.base64('SECRETS_KEY must be base64 of 32 bytes'))),
  STF_JS_WORKERS: int(2, 1, 64),
  STF_TIMEOUT_MS: int(10_000, 100, 300_000),
  STF_MAX_CODE_BYTES: int(5 * 1024 * 1024, 1024, 100 * 1024 * 1024),
  OUTBOUND_ALLOWLIST: v.optional(
    v.pipe(
      v.string(),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        try {
          return parseAllowlist(dataset.value);
        } catch (err) {
          addIssue({ message: `OUTBOUND_ALLOWLIST: ${(err as Error).message}` });
          return NEVER;
        }
      }),
    ),
    '',
  ),
  STF_WASM_ALLOWED_HOSTS: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',').map((h) => h.trim()).filter(Boolean)),
      v.check((hosts) => hosts.every((h) => /^(\*\.)?[A-Za-z0-9.-]+$/.test(h)), 'STF_WASM_ALLOWED_HOSTS: comma-separated host names (`*.example.com` allowed)'),
    ),
    '',
  ),
  DOCKER_HOST: v.optional(
    v.pipe(v.string(), v.trim(), v.regex(/^(unix:\/\/\/|tcp:\/\/)\S+$/, 'DOCKER_HOST must be unix:///path/to.sock or tcp://host:port')),
  ),
  STF_DOCKER_TIMEOUT_MS: int(300_000, 1_000, 3_600_000),
  STF_DOCKER_MEMORY_MB: int(256, 16, 65_536),
  STF_DOCKER_PIDS: int(64, 8, 4_096),
  STF_DOCKER_CONCURRENCY: int(2, 1, 64),
  // Image of each docker run's relay container (docs/stfs.md); unset: the engine's localhost/wds-node image.
  STF_DOCKER_RELAY_IMAGE: opt,
  // Fair sharing of the STF runtimes and of workflow executions between workspaces (docs/stfs.md, docs/workflows.md).
  STF_WASM_CONCURRENCY: int(4, 1, 64),
  STF_WORKSPACE_QUEUE: int(16, 0, 10_000),
  STF_WORKSPACE_MAX_RUNNING: int(0, 0, 64),
  WORKFLOW_WORKSPACE_CONCURRENCY: int(8, 1, 10_000),
  WORKFLOW_WORKSPACE_QUEUE: int(32, 0, 100_000),
  WORKFLOW_QUEUE_TIMEOUT_MS: int(30_000, 0, 3_600_000),
  // Queued workflow runs (async execute, schedules, hooks, events) one process runs at once.
  WORKFLOW_JOB_CONCURRENCY: int(4, 1, 1000),
  // Runs one workspace may have queued at once; one more is 429.
  WORKFLOW_WORKSPACE_QUEUED_MAX: int(1000, 1, 1_000_000),
  // What each step of a recorded run keeps of its input and of its output (UTF-8 bytes of JSON, each; beyond: a
  // truncation marker). 0 keeps nothing (docs/workflows.md#step-data).
  WORKFLOW_STEP_DATA_MAX_BYTES: int(64 * 1024, 0, 16 * 1024 * 1024),
  // Workspaces one user may have created and not deleted; one more is 403. 0: no limit. Fair sharing is by the
  // workspaces' creator either way; this bounds what else one person multiplies.
  MAX_WORKSPACES_PER_USER: int(100, 0, 1_000_000),
  // Workflow schedules: how often a process with background work fires the due ones, and the shortest interval one
  // may have (a cron expression firing more often is refused).
  SCHEDULE_TICK_MS: int(1000, 100, 60_000),
  SCHEDULE_MIN_INTERVAL_MS: int(60_000, 1000, 86_400_000),
  // Inbound workflow hooks: the largest delivery body, and how long delivery ids are remembered (redeliveries).
  HOOK_MAX_BODY_BYTES: int(1024 * 1024, 1024, 64 * 1024 * 1024),
  HOOK_DELIVERY_RETENTION_MS: int(7 * 24 * 3600_000, 60_000, 365 * 24 * 3600_000),
  // Event triggers: attempts of an event before it is dead, the first retry's delay (doubled each time), and the
  // events one trigger accepts per minute (the loop guard).
  TRIGGER_MAX_ATTEMPTS: int(5, 1, 100),
  TRIGGER_RETRY_DELAY_MS: int(10_000, 100, 3_600_000),
  TRIGGER_MAX_EVENTS_PER_MINUTE: int(60, 1, 100_000),
  // Captured row changes (realtime, row-event triggers) no trigger waits for are kept this long, then pruned.
  ROW_CHANGE_RETENTION_MS: int(60_000, 1000, 7 * 24 * 3600_000),
  // Realtime (GET /ws): bytes a connection may have waiting to be sent before it is closed as a slow consumer, the
  // connections one API process accepts (in all, and of one user), and how often the server pings (a connection
  // silent for two is dropped).
  REALTIME_MAX_BUFFER_BYTES: int(1024 * 1024, 16 * 1024, 256 * 1024 * 1024),
  REALTIME_MAX_CONNECTIONS: int(1000, 1, 1_000_000),
  REALTIME_MAX_CONNECTIONS_PER_USER: int(20, 1, 1_000_000),
  REALTIME_HEARTBEAT_MS: int(30_000, 1000, 600_000),
  MAX_FILE_BYTES: int(1024 * 1024 * 1024, 1, 1024 * 1024 * 1024 * 1024),
  STORAGE_BACKEND: v.optional(v.picklist(['fs', 's3'], 'STORAGE_BACKEND must be fs or s3'), 'fs'),
  STORAGE_DIR: opt,
  S3_BUCKET: opt,
  S3_ENDPOINT: url,
  S3_REGION: v.optional(v.string(), 'us-east-1'),
  S3_ACCESS_KEY_ID: opt,
  S3_SECRET_ACCESS_KEY: opt,
  S3_FORCE_PATH_STYLE: v.optional(v.pipe(v.picklist(['true', 'false', '1', '0']), v.transform((s) => s === 'true' || s === '1')), 'false'),
  S3_PREFIX: v.optional(v.string(), ''),
  CACHE_TTL_MS: int(30_000, 0, 3_600_000),
  // Request rates per API process, per minute with a minute's worth as burst; 0 turns a limit off (docs/http-api.md).
  RATE_LIMIT_PER_PRINCIPAL: int(0, 0, 10_000_000),
  RATE_LIMIT_PER_WORKSPACE: int(0, 0, 100_000_000),
  RATE_LIMIT_AUTH_FAILURES_PER_IP: int(60, 0, 10_000_000),
  RATE_LIMIT_MAX_KEYS: int(100_000, 100, 10_000_000),
  // Reverse proxies in front of the service whose X-Forwarded-For entries are believed (0: the socket address).
  TRUST_PROXY: int(0, 0, 10),
  // Browser pages on these origins may call the API (docs/http-api.md#browser-access-cors): `*` or exact origins.
  CORS_ORIGINS: v.optional(
    v.pipe(
      v.string(),
      v.rawTransform(({ dataset, addIssue, NEVER }): CorsOrigins => {
        try {
          return parseCorsOrigins(dataset.value);
        } catch (err) {
          addIssue({ message: `CORS_ORIGINS: ${(err as Error).message}` });
          return NEVER;
        }
      }),
    ),
    '',
  ),
  EMBEDDER: v.optional(v.picklist(['local', 'openai', 'hashing', 'none'], 'EMBEDDER must be local, openai, hashing or none'), 'local'),
  EMBEDDING_BASE_URL: url,
  EMBEDDING_API_KEY: opt,
  EMBEDDING_MODEL: v.optional(v.string(), 'text-embedding-3-small'),
  EMBEDDING_DIMENSIONS: int(1536, 1, 16_000),
  EMBEDDING_TIMEOUT_MS: int(30_000, 100, 600_000),
  EMBEDDING_MAX_FILE_BYTES: int(50 * 1024 * 1024, 1, 1024 * 1024 * 1024),
  EMBEDDING_JOB_TIMEOUT_MS: int(15 * 60_000, 1000, 24 * 3600_000),
  // Memory of the in-process copies exact searches without pgvector score (docs/embeddings.md); 0 scans in SQL.
  EMBEDDING_INDEX_MAX_BYTES: int(512 * 1024 * 1024, 0, 1024 * 1024 * 1024 * 1024),
  JOB_POLL_INTERVAL_MS: int(2000, 500, 60_000),
  // Nothing left behind after a crash: run liveness, sweeps, upload time (docs/workflows.md, docs/files.md).
  RUN_HEARTBEAT_INTERVAL_MS: int(10_000, 100, 600_000),
  RUN_STALE_AFTER_MS: int(60_000, 1_000, 24 * 3600_000),
  // Attempts of a queued workflow run cut by a crash (resumed in place, docs/automation.md); then failed interrupted.
  RUN_MAX_ATTEMPTS: int(3, 1, 100),
  MAINTENANCE_INTERVAL_MS: int(60_000, 1_000, 24 * 3600_000),
  BLOB_SWEEP_INTERVAL_MS: int(10 * 60_000, 0, 7 * 24 * 3600_000),
  TEMP_UPLOAD_MAX_AGE_MS: int(10 * 60_000, 60_000, 7 * 24 * 3600_000),
  ORPHAN_BLOB_GRACE_MS: int(3600_000, 60_000, 30 * 24 * 3600_000),
  UPLOAD_MIN_BYTES_PER_SECOND: int(1024 * 1024, 1024, 10 * 1024 * 1024 * 1024),
  PROVIDERS: opt,
  PROVIDERS_ALLOW_HTTP_LOOPBACK: v.optional(v.pipe(v.picklist(['true', 'false', '1', '0']), v.transform((s) => s === 'true' || s === '1')), 'false'),
  LOG_LEVEL: v.optional(v.picklist(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
});

export type Config = v.InferOutput<typeof ConfigSchema>;

export function loadConfig(env: Record<string, string | undefined>): Config {
  // Empty variables count as unset, as in most twelve-factor services.
  const present = Object.fromEntries(Object.entries(env).filter(([, val]) => val !== undefined && val !== ''));
  const r = v.safeParse(ConfigSchema, present);
  if (!r.success) {
    const why = r.issues.map((i) => `${v.getDotPath(i) ?? '?'}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${why}`);
  }
  const config = r.output;
  if (config.AUTH_AUTHORIZE_URL !== undefined) {
    const missing = [config.AUTH_TOKEN_URL ? '' : 'AUTH_TOKEN_URL', config.AUTH_CLIENT_ID ? '' : 'AUTH_CLIENT_ID'].filter(Boolean);
    if (missing.length > 0) throw new Error(`Invalid configuration: AUTH_AUTHORIZE_URL needs ${missing.join(' and ')} (the token exchange)`);
    if (!config.CONSOLE_URL?.startsWith('https://')) {
      throw new Error('Invalid configuration: AUTH_AUTHORIZE_URL needs CONSOLE_URL to be an https URL: the redirect URI is <CONSOLE_URL>/console/callback');
    }
  }
  return config;
}
