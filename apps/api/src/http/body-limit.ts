import { ServiceError } from '@wds/errors';
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from './env.js';

/**
 * The request body's size limit (413 PAYLOAD_TOO_LARGE in the envelope). A request that declares its length is
 * judged by the header alone, before anything is read; only a chunked body is counted while it is read (Hono's
 * bodyLimit). Requests without a body pass: asking for one would build a whole web Request for nothing.
 */
export function limitBody(maxSize: number): MiddlewareHandler<AppEnv> {
  const tooLarge = () => new ServiceError('PAYLOAD_TOO_LARGE', 'Request body too large', `limit ${maxSize} bytes`);
  const counted = bodyLimit({ maxSize, onError: (c) => c.json(tooLarge().toBody(), 413) });
  return (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      if (!/^\d+$/.test(length.trim())) throw new ServiceError('BAD_REQUEST', 'Malformed Content-Length');
      return Number(length) > maxSize ? Promise.resolve(c.json(tooLarge().toBody(), 413)) : next();
    }
    return counted(c, next);
  };
}
