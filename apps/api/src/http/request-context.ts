import type { MiddlewareHandler } from 'hono';
import { unredacted } from '../logger.js';
import type { Services } from '../services.js';
import type { AppEnv } from './env.js';
import { operationLabel } from './metrics.js';

/** hono/request-id's rule: a caller's X-Request-Id is kept when it is 1 to 255 word characters, `-` or `=`. */
const CALLER_REQUEST_ID = /^[\w\-=]{1,255}$/;

/**
 * The first middleware of every request: its id (the caller's X-Request-Id when acceptable, else a random UUID;
 * echoed in the response header), the services, and one log line once it is answered. One middleware instead of
 * Hono's requestId plus our own, and `c.get` rather than `c.var` (which copies every variable on each access).
 */
export function requestContext(services: Services): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const given = c.req.header('x-request-id');
    const requestId = given !== undefined && CALLER_REQUEST_ID.test(given) ? given : crypto.randomUUID();
    c.set('requestId', requestId);
    c.header('X-Request-Id', requestId);
    c.set('services', services);
    const started = performance.now();
    await next();
    // A handler's own Response (a download, a pass-through) does not carry headers set on the context before it.
    if (!c.res.headers.has('x-request-id')) c.header('X-Request-Id', requestId);
    const seconds = (performance.now() - started) / 1000;
    // By declared operation and status (docs/metrics.md); scrapes of /metrics are not counted.
    const operation = operationLabel(c);
    if (operation !== undefined) services.metrics.httpRequest(operation, c.res.status, seconds);
    // The fields are fixed here and none is a redacted one: the redaction pass could never change this line.
    unredacted(services.logger).info(
      {
        req_id: requestId,
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        user_id: c.get('principal')?.user.id,
      },
      'request',
    );
  };
}
