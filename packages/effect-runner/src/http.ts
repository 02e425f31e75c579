/**
 * One outbound HTTP request through the guard: the host is resolved by OutboundGuard.resolve on every
 * connection (a `lookup` given to http(s).request, so nothing can rebind the name between the check and the
 * connect), IP-literal hosts are checked before the request (Node does not call `lookup` for them). One deadline
 * covers DNS, connect and the whole response; bodies over the cap are aborted; redirects are never followed.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { cancelledError, EffectError } from './errors.js';
import type { OutboundGuard } from './guard.js';

export interface HttpRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  maxBytes: number;
  guard: OutboundGuard;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** A header value Node would reject (control characters, non-Latin-1). */
export const INVALID_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses the URL of a call: absolute http: or https: with a host, else EffectError 'invalid'. */
export function parseTargetUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new EffectError('invalid', `not an absolute URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EffectError('invalid', `only http and https URLs may be called, not ${url.protocol}`);
  if (url.hostname === '') throw new EffectError('invalid', `the URL has no host: ${text}`);
  return url;
}

/**
 * An outgoing request to `url` whose connection resolves through the guard (no pooled sockets, so every request is
 * checked). `user:password@` in the URL becomes Basic auth. Throws synchronously for an invalid method or header.
 */
export function guardedRequest(
  url: URL,
  guard: OutboundGuard,
  opts: { method: string; headers: http.OutgoingHttpHeaders },
): http.ClientRequest {
  return (url.protocol === 'https:' ? https : http).request({
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    method: opts.method,
    headers: opts.headers,
    auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
    lookup: guardedLookup(guard),
    agent: false,
  });
}

/** A socket `lookup` that resolves through the guard, so the address checked is the address connected to. */
export function guardedLookup(guard: OutboundGuard): LookupFunction {
  return (hostname, options, callback) => {
    guard.resolve(hostname).then(
      ({ address, family }) => {
        if (options.all) callback(null, [{ address, family }]);
        else callback(null, address, family);
      },
      (err: Error) => callback(err, ''),
    );
  };
}

/** Response headers as one string per name (repeated headers joined with ', '). */
function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** JSON when the content type says so and it parses, else UTF-8 text; an empty body is null. */
export function parseBody(bytes: Buffer, contentType: string | undefined): unknown {
  if (bytes.length === 0) return null;
  const text = bytes.toString('utf8');
  if (contentType && /[/+]json\b/i.test(contentType)) {
    try {
      return JSON.parse(text);
    } catch {
      // not JSON after all: keep the text
    }
  }
  return text;
}

function transportError(err: Error, url: URL): EffectError {
  if (err instanceof EffectError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  return new EffectError('network', `request to ${url.host} failed: ${code ?? err.message}`, err.message);
}

/** Sends one request; resolves with any HTTP status, rejects with EffectError on transport failures. */
export async function sendRequest(req: HttpRequest): Promise<HttpResponse> {
  const { url, guard, signal, maxBytes, timeoutMs } = req;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EffectError('invalid', `only http and https URLs may be called, not ${url.protocol}`);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (signal?.aborted) throw cancelledError(signal);
  if (isIP(host)) await guard.resolve(host);

  return new Promise<HttpResponse>((resolve, reject) => {
    let settled = false;
    let outgoing: http.ClientRequest | undefined;
    const settle = (err: EffectError | null, value?: HttpResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        reject(err);
        outgoing?.destroy();
      } else {
        resolve(value!);
      }
    };
    const onAbort = () => settle(cancelledError(signal!));
    const timer = setTimeout(() => settle(new EffectError('timeout', `no complete answer from ${url.host} within ${timeoutMs} ms`)), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    const tooLarge = () => new EffectError('too_large', `the response from ${url.host} is larger than ${maxBytes} bytes`);

    try {
      outgoing = guardedRequest(url, guard, { method: req.method, headers: req.headers });
    } catch (err) {
      // Node validates methods and headers synchronously
      return settle(new EffectError('invalid', `cannot send the request: ${(err as Error).message}`));
    }
    outgoing.on('error', (err) => settle(transportError(err, url)));
    outgoing.on('response', (res) => {
      const declared = Number(res.headers['content-length']);
      if (req.method !== 'HEAD' && Number.isFinite(declared) && declared > maxBytes) return settle(tooLarge());
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) settle(tooLarge());
        else chunks.push(chunk);
      });
      res.on('error', (err) => settle(transportError(err, url)));
      res.on('end', () =>
        settle(null, {
          status: res.statusCode ?? 0,
          headers: flattenHeaders(res.headers),
          body: parseBody(Buffer.concat(chunks), res.headers['content-type']),
        }),
      );
      res.on('close', () => {
        if (!res.complete) settle(new EffectError('network', `${url.host} closed the connection before the response was complete`));
      });
    });
    outgoing.end(req.body);
  });
}
