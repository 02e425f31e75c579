import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.js';

/** CORS_ORIGINS parsed: `*` (any origin), or the exact origins allowed; empty is off (no CORS headers at all). */
export type CorsOrigins = '*' | readonly string[];

/**
 * Request headers a browser page may send: credentials (Bearer JWTs, API keys, session tokens), the workspace, JSON
 * bodies, byte ranges of downloads, the caller's request id, `Prefer` (async workflow execution), and MCP's session
 * and tool-set headers. Not X-Admin-Token: the
 * admin interface is for operators' tools, never for a page (its preflight does not allow the header).
 */
export const CORS_ALLOW_HEADERS = [
  'Authorization',
  'Content-Type',
  'X-Workspace-ID',
  'X-Request-Id',
  'Range',
  'Prefer',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'X-MCP-Features',
  'X-MCP-Tools',
  'X-MCP-Read-Only',
  'Last-Event-ID',
].join(', ');

/** Every method the API has; the preflight does not look up which of them the path has (a wrong one is a 405 then). */
export const CORS_ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE';

/** Response headers a page may read beyond the CORS-safelisted ones (Content-Type, Content-Length, …). */
export const CORS_EXPOSE_HEADERS = [
  'X-Request-Id',
  'X-Workflow-Run-Id',
  'Location',
  'Preference-Applied',
  'Content-Disposition',
  'Content-Range',
  'Accept-Ranges',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
  'Allow',
  'Mcp-Session-Id',
  // A 401's challenge: where a browser MCP client finds the authorization server (oauth-resource.ts).
  'WWW-Authenticate',
].join(', ');

/** How long a browser may reuse a preflight answer (Chromium caps it at 2 h, Firefox at 24 h). */
export const CORS_MAX_AGE_SECONDS = 7200;

/**
 * CORS_ORIGINS: `*`, or comma-separated origins `scheme://host[:port]` (http or https, nothing after the host),
 * kept as browsers serialize them in the Origin header (lower-case host, no default port, no trailing `/`).
 * Throws on anything else.
 */
export function parseCorsOrigins(value: string): CorsOrigins {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.includes('*')) {
    if (entries.length > 1) throw new Error('`*` allows every origin and cannot be combined with others');
    return '*';
  }
  const origins = entries.map((entry) => {
    let u: URL;
    try {
      u = new URL(entry);
    } catch {
      throw new Error(`${entry} is not an origin (scheme://host[:port])`);
    }
    // A trailing `/` is forgiven; any other path, a query or a fragment is not (an origin has none).
    const bare = u.pathname === '/' && !entry.includes('?') && !entry.includes('#');
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !bare || u.username || u.password) {
      throw new Error(`${entry} is not an origin: http(s)://host[:port], no path, query or credentials`);
    }
    return u.origin;
  });
  return [...new Set(origins)];
}

/**
 * Cross-origin access for browser pages (docs/http-api.md#browser-access-cors), or undefined when CORS_ORIGINS is
 * unset. Installed before rate limits, body limits and authentication:
 * - a preflight (OPTIONS with Access-Control-Request-Method) from an allowed origin is answered here with 204 for
 *   any path, without credentials, rate limits or the database;
 * - every other response to an allowed origin (errors, 404/405 and streamed downloads included) carries
 *   Access-Control-Allow-Origin and Access-Control-Expose-Headers;
 * - an origin not listed gets no CORS header at all (the browser refuses the response), and its preflight is
 *   routed like any OPTIONS request (405 on an API path, 404 elsewhere), exactly as with CORS off.
 * No Access-Control-Allow-Credentials: credentials travel in the Authorization header, which needs none, and the
 * API sets and reads no cookies.
 */
export function cors(allowed: CorsOrigins): MiddlewareHandler<AppEnv> | undefined {
  if (allowed !== '*' && allowed.length === 0) return undefined;
  const exact = allowed === '*' ? undefined : new Set(allowed);
  return async (c, next) => {
    const origin = c.req.header('origin');
    if (origin === undefined || (exact && !exact.has(origin))) {
      await next();
      if (exact) varyOrigin(c);
      return;
    }
    const allowOrigin = exact ? origin : '*';
    if (c.req.method === 'OPTIONS' && c.req.header('access-control-request-method') !== undefined) {
      c.header('Access-Control-Allow-Origin', allowOrigin);
      if (exact) c.header('Vary', 'Origin');
      c.header('Access-Control-Allow-Methods', CORS_ALLOW_METHODS);
      c.header('Access-Control-Allow-Headers', CORS_ALLOW_HEADERS);
      c.header('Access-Control-Max-Age', String(CORS_MAX_AGE_SECONDS));
      return c.body(null, 204);
    }
    await next();
    // Set on whatever response ended the request: the handler's own Response (a streamed download, which does not
    // carry headers set on the context before it), the error envelope of onError, the 404. c.header copies a
    // finalized response first, so headers that cannot be changed (a fetch() Response) are no obstacle.
    c.header('Access-Control-Allow-Origin', allowOrigin);
    c.header('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS);
    if (exact) varyOrigin(c);
  };
}

/** The answer depends on Origin unless every origin gets the same `*`: caches must keep the answers apart. */
function varyOrigin(c: Context<AppEnv>): void {
  const vary = c.res.headers.get('vary');
  if (vary === null || !/(^|,)\s*(origin|\*)\s*(,|$)/i.test(vary)) c.header('Vary', 'Origin', { append: true });
}
