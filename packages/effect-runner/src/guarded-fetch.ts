import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import type { OutboundGuard } from './guard.js';
import { guardedRequest } from './http.js';

/**
 * A `fetch` for wasm plugins that goes through the outbound guard the way effects do: the host is resolved by
 * the guard on the connection itself (nothing can rebind the name between the check and the connect), an IP
 * literal is checked first (Node does not look those up), no pooled sockets, and redirects are returned to the
 * plugin, never followed. A refusal rejects with the guard's EffectError ("outbound calls may not reach …").
 */
export function guardedFetch(guard: OutboundGuard, opts: { timeoutMs?: number } = {}): typeof fetch {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`only http and https URLs may be called, not ${url.protocol}`);
    // The caller's signal (a run's deadline) or the backstop, whichever comes first; it covers the whole exchange,
    // the response body included: a server that sends headers and then trickles cannot hold the call open.
    const signal = AbortSignal.any([...(init.signal ? [init.signal] : []), AbortSignal.timeout(timeoutMs)]);
    signal.throwIfAborted();
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) await guard.resolve(host);
    const body = requestBody(init.body);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    if (body) headers['content-length'] = String(body.byteLength);
    return new Promise<Response>((resolve, reject) => {
      const req = guardedRequest(url, guard, { method: (init.method ?? 'GET').toUpperCase(), headers });
      let res: IncomingMessage | undefined;
      const onAbort = () => {
        const reason = signal.reason instanceof Error ? signal.reason : new Error('the request was aborted');
        req.destroy(reason);
        res?.destroy(reason); // the body's reader rejects
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const done = () => signal.removeEventListener('abort', onAbort);
      req.on('error', (err) => {
        done();
        reject(err);
      });
      req.on('response', (r) => {
        res = r;
        r.once('close', done);
        try {
          resolve(toResponse(r));
        } catch (err) {
          done();
          r.destroy();
          reject(err);
        }
      });
      req.end(body);
    });
  };
}

function requestBody(body: RequestInit['body']): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('the request body must be text or bytes');
}

function toResponse(res: IncomingMessage): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) throw new Error(`unexpected HTTP status ${status}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  }
  const noBody = status === 204 || status === 205 || status === 304;
  if (noBody) res.resume();
  return new Response(noBody ? null : (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>), { status, headers });
}
