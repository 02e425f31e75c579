import { isConnectionLost } from '@wds/db';
import { ServiceError, internalErrorBody } from '@wds/errors';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { inputErrorOf } from './db-errors.js';
import type { AppEnv } from './env.js';

/** The one place where errors become HTTP responses. Unknown errors are logged, never shown. */
export function renderError(err: Error, c: Context<AppEnv>): Response {
  if (err instanceof ServiceError) return c.json(err.toBody(), err.status);
  if (err instanceof HTTPException) {
    // Hono's own exceptions (body limit, malformed input to its helpers).
    const e =
      err.status === 413
        ? new ServiceError('PAYLOAD_TOO_LARGE', 'Request body too large')
        : err.status === 401
          ? new ServiceError('UNAUTHORIZED', 'Missing or invalid token')
          : new ServiceError('BAD_REQUEST', err.message || 'Bad request');
    return c.json(e.toBody(), e.status);
  }
  if (isConnectionLost(err)) {
    // The database restarted or a connection was cut: this request failed, the pools reconnect for the next one.
    c.var.services?.logger.warn({ err: err.message, req_id: c.var.requestId, path: c.req.path }, 'database connection lost');
    const e = new ServiceError('SERVICE_UNAVAILABLE', 'The database is not reachable', 'the connection was lost or refused; try again');
    c.header('Retry-After', '1');
    return c.json(e.toBody(), e.status);
  }
  const refused = inputErrorOf(err);
  if (refused) {
    c.var.services?.logger.warn({ err, req_id: c.var.requestId, path: c.req.path }, 'database refused request input');
    return c.json(refused.toBody(), refused.status);
  }
  c.var.services?.logger.error({ err, req_id: c.var.requestId, path: c.req.path }, 'unhandled error');
  return c.json(internalErrorBody(c.var.requestId), 500);
}

export const renderNotFound = (c: Context<AppEnv>): Response =>
  c.json(new ServiceError('NOT_FOUND', 'Route not found', `${c.req.method} ${c.req.path}`).toBody(), 404);
