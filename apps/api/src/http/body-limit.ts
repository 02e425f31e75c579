import { Readable } from 'node:stream';
import { ServiceError, validationError } from '@wds/errors';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.js';

/**
 * Request bodies: their size limit and their one reader. A request that declares its length is judged by the header
 * alone, before anything is read (413 PAYLOAD_TOO_LARGE in the envelope); every body, declared or chunked, is also
 * counted while it is read, by whoever reads it — the JSON routes, MCP and the routes that take raw bytes (webhooks)
 * all read the same Node stream through this file, so no framing reaches a reader that another one already drained.
 */

const tooLarge = (maxSize: number) => new ServiceError('PAYLOAD_TOO_LARGE', 'Request body too large', `limit ${maxSize} bytes`);

/** Records `maxSize` as the request's body limit; a declared length above it is 413 at once. */
export function limitBody(maxSize: number): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      if (!/^\d+$/.test(length.trim())) throw new ServiceError('BAD_REQUEST', 'Malformed Content-Length');
      if (Number(length) > maxSize) return Promise.resolve(c.json(tooLarge(maxSize).toBody(), 413));
    }
    c.set('bodyLimit', maxSize);
    return next();
  };
}

/**
 * The request body as bytes, uncounted (uploads count it against MAX_FILE_BYTES themselves). Under @hono/node-server
 * this is the Node request itself: its web-stream wrapper reads ahead without backpressure, so a consumer slower than
 * the network would make it queue the whole body in memory. Undefined: the request has no body.
 */
function rawBody(c: Context<AppEnv>): Readable | undefined {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  if (incoming instanceof Readable) return incoming;
  const body = c.req.raw.body;
  return body ? Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>) : undefined;
}

/**
 * The chunks of `source`, failing with `tooLarge()` at the chunk that crosses `max`. Stopping never destroys the
 * source: destroying a Node request closes its connection before the 413 is written; the server drains what is left
 * after the answer instead (bounded by @hono/node-server, which then closes the connection).
 */
async function* counted(source: Readable, max: number, tooLarge: () => ServiceError): AsyncGenerator<Buffer> {
  let size = 0;
  for await (const chunk of source.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw tooLarge();
    yield chunk;
  }
}

/** All of `source`, at most `max` bytes (`tooLarge()` beyond, the rest left unread). */
export async function readCapped(source: Readable, max: number, tooLarge: () => ServiceError): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of counted(source, max, tooLarge)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * The request body as a stream, counted against the limit limitBody recorded (routes outside it, the uploads,
 * get it uncounted). 400 when the request has none.
 */
export function requestBodyStream(c: Context<AppEnv>): Readable {
  const source = rawBody(c);
  if (!source) throw validationError('the request has no body');
  const max = c.get('bodyLimit');
  return max === undefined ? source : Readable.from(counted(source, max, () => tooLarge(max)), { objectMode: false });
}

/** The whole request body as text (UTF-8, as `Request.text()` decodes it); '' without one; at most the recorded limit. */
export async function readBodyText(c: Context<AppEnv>): Promise<string> {
  const source = rawBody(c);
  if (!source) return '';
  const max = c.get('bodyLimit') ?? c.get('services').config.MAX_BODY_BYTES;
  return new TextDecoder().decode(await readCapped(source, max, () => tooLarge(max)));
}
