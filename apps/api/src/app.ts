import { databaseAnswers } from '@wds/db';
import { Hono } from 'hono';
import { limitBody } from './http/body-limit.js';
import { cors } from './http/cors.js';
import type { AppEnv } from './http/env.js';
import { renderError, renderNotFound } from './http/errors.js';
import { MemoRouter } from './http/memo-router.js';
import { mountMetrics } from './http/metrics.js';
import { mountProtectedResourceMetadata } from './http/oauth-resource.js';
import { openApiOf } from './http/openapi.js';
import { mountConsole } from './http/console.js';
import { mountDocsPage } from './http/docs-page.js';
import { type AnyRoute, mount, mountMethodNotAllowed } from './http/route.js';
import { rateLimit } from './http/rate-limit.js';
import { requestContext } from './http/request-context.js';
import { McpEndpoint } from './mcp/server.js';
import { adminRoutes } from './routes/admin.js';
import { adminCredentialRoutes } from './routes/admin-credentials.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { auditRoutes } from './routes/audit.js';
import { authRoutes } from './routes/auth.js';
import { effectRoutes } from './routes/effects.js';
import { embeddingRoutes } from './routes/embeddings.js';
import { driveSyncRoutes } from './routes/drive-sync.js';
import { saasProxyRoutes } from './routes/saas-proxy.js';
import { documentRoutes } from './routes/documents.js';
import { fileRoutes } from './routes/files.js';
import { memberRoutes } from './routes/members.js';
import { pinnedChartRoutes } from './routes/pinned-charts.js';
import { policyRoutes } from './routes/policies.js';
import { setupRoutes } from './routes/setup.js';
import { sqlRoutes } from './routes/sql.js';
import { sqlReadRoutes } from './routes/sql-read.js';
import { instantRunRoutes } from './routes/instant-run.js';
import { stfLibraryRoutes } from './routes/stf-libraries.js';
import { stfRoutes } from './routes/stfs.js';
import { workflowRoutes } from './routes/workflows.js';
import { scheduleRoutes } from './routes/schedules.js';
import { hookRoutes } from './routes/hooks.js';
import { realtimeRoutes } from './routes/realtime.js';
import { triggerRoutes } from './routes/triggers.js';
import { workspaceRoutes } from './routes/workspaces.js';
import type { Services } from './services.js';

const READY_TIMEOUT_MS = 2000;
const FILE_UPLOAD = /^\/api\/v1\/workspaces\/[^/]+\/files(\/multipart)?\/?$/;

/** Every public and admin route, in one list: mounted, documented and security-tested from here. */
export const routes: readonly AnyRoute[] = [
  ...authRoutes,
  ...workspaceRoutes,
  ...memberRoutes,
  ...setupRoutes,
  ...apiKeyRoutes,
  ...sqlRoutes,
  ...sqlReadRoutes,
  ...policyRoutes,
  ...instantRunRoutes,
  ...stfRoutes,
  ...stfLibraryRoutes,
  ...effectRoutes,
  ...workflowRoutes,
  ...scheduleRoutes,
  ...hookRoutes,
  ...triggerRoutes,
  ...realtimeRoutes,
  ...fileRoutes,
  ...documentRoutes,
  ...embeddingRoutes,
  ...driveSyncRoutes,
  ...saasProxyRoutes,
  ...pinnedChartRoutes,
  ...auditRoutes,
  ...adminRoutes,
  ...adminCredentialRoutes,
];

export function createApp(services: Services): Hono<AppEnv> {
  const app = new Hono<AppEnv>({ router: new MemoRouter() });
  // Request id, services and the log line of each request.
  app.use(requestContext(services));
  // Browser pages on other origins (CORS_ORIGINS): preflights end here, before rate limits and credentials.
  const allowCors = cors(services.config.CORS_ORIGINS);
  if (allowCors) app.use(allowCors);
  // The process's budgets, which the WebSocket upgrade (realtime.ts) charges too.
  app.use(rateLimit(services.rateLimits));
  const bodyLimit = limitBody(services.config.MAX_BODY_BYTES);
  // File uploads stream their body to the blob store under their own limit (MAX_FILE_BYTES).
  app.use('/api/*', (c, next) => (c.req.method === 'POST' && FILE_UPLOAD.test(c.req.path) ? next() : bodyLimit(c, next)));
  app.use('/admin/*', bodyLimit);
  // MCP bodies carry uploads as base64: their own limit, applied by the transport too.
  app.use('/mcp', limitBody(services.config.MCP_MAX_BODY_BYTES));
  app.onError(renderError);
  app.notFound(renderNotFound);

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  // The service pool (never the workspaces' SQL pools), bounded: a database that is down or hangs is a quick 503.
  app.get('/readyz', async (c) =>
    (await databaseAnswers(services.db, READY_TIMEOUT_MS))
      ? c.json({ status: 'ok' })
      : c.json({ error: 'Database unreachable', code: 'SERVICE_UNAVAILABLE' }, 503),
  );
  const openapi = openApiOf(routes);
  app.get('/api/v1/openapi.json', (c) => c.json(openapi));
  mountDocsPage(app);
  mountConsole(app, services.config.CONSOLE_ENABLED);
  // Prometheus text to the METRICS_TOKEN bearer; 404 without the setting (docs/metrics.md).
  mountMetrics(app, services);
  // RFC 9728 metadata naming the authorization server, 404 without one (docs/http-api.md#oauth-discovery).
  mountProtectedResourceMetadata(app, services.config);

  for (const r of routes) mount(app, r);
  mountMethodNotAllowed(app, routes);
  // The same operations as tools (docs/mcp.md).
  new McpEndpoint(services, routes).mount(app);
  return app;
}
