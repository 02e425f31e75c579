import { isConnectionLost } from '@wds/db';
import { ServiceError, internalErrorBody } from '@wds/errors';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { inputErrorOf } from './db-errors.js';
import type { AppEnv } from './env.js';
import { challengeOf } from './oauth-resource.js';

/** What an error becomes for a caller: the envelope (never an unknown error's message or stack) and how to log it. */
export interface ClassifiedError {
  error: ServiceError | undefined;
  /** The body of an unknown error (500): a fixed message and the request id. */
  internal: boolean;
  retryAfterSeconds?: number;
  log?: { level: 'warn' | 'error'; message: string };
}

/** The one mapping of thrown errors to the error envelope, for every transport (HTTP responses, MCP tool errors). */
export function classifyError(err: unknown): ClassifiedError {
  if (err instanceof ServiceError) return { error: err, internal: false };
  if (err instanceof HTTPException) {
    // Hono's own exceptions (body limit, malformed input to its helpers).
    const e =
      err.status === 413
        ? new ServiceError('PAYLOAD_TOO_LARGE', 'Request body too large')
        : err.status === 401
          ? new ServiceError('UNAUTHORIZED', 'Missing or invalid token')
          : new ServiceError('BAD_REQUEST', err.message || 'Bad request');
    return { error: e, internal: false };
  }
  if (isConnectionLost(err)) {
    // The database restarted or a connection was cut: this call failed, the pools reconnect for the next one.
    const e = new ServiceError('SERVICE_UNAVAILABLE', 'The database is not reachable', 'the connection was lost or refused; try again');
    return { error: e, internal: false, retryAfterSeconds: 1, log: { level: 'warn', message: 'database connection lost' } };
  }
  const refused = inputErrorOf(err);
  if (refused) return { error: refused, internal: false, log: { level: 'warn', message: 'database refused request input' } };
  return { error: undefined, internal: true, log: { level: 'error', message: 'unhandled error' } };
}

/** The one place where errors become HTTP responses. Unknown errors are logged, never shown. */
export function renderError(err: Error, c: Context<AppEnv>): Response {
  const k = classifyError(err);
  if (k.log) {
    const detail = k.log.level === 'warn' && isConnectionLost(err) ? { err: err.message } : { err };
    c.get('services')?.logger[k.log.level]({ ...detail, req_id: c.get('requestId'), path: c.req.path }, k.log.message);
  }
  const retryAfter = k.retryAfterSeconds ?? k.error?.retryAfterSeconds;
  if (retryAfter !== undefined) c.header('Retry-After', String(retryAfter));
  if (!k.error) return c.json(internalErrorBody(c.get('requestId')), 500);
  // RFC 6750 §3 and the MCP authorization spec: every 401 says how to authenticate (oauth-resource.ts).
  if (k.error.status === 401) {
    const challenge = challengeOf(c);
    if (challenge) c.header('WWW-Authenticate', challenge);
  }
  return c.json(k.error.toBody(), k.error.status);
}

export const renderNotFound = (c: Context<AppEnv>): Response =>
  c.json(new ServiceError('NOT_FOUND', 'Route not found', `${c.req.method} ${c.req.path}`).toBody(), 404);
