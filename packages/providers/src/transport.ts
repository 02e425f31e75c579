/**
 * One outbound HTTP exchange through the OutboundGuard, the same way the effect runner connects: the host is
 * resolved and checked by `guard.resolve` inside the socket's `lookup` (so the checked address is the one connected
 * to, on every connection), and an IP-literal host is checked before the request (Node does not call `lookup` for
 * it). Redirects are not followed here; errors become UPSTREAM_ERROR naming the host only, never a header.
 */
import type http from 'node:http';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { EffectError, guardedRequest, type OutboundGuard } from '@wds/effect-runner';
import { ServiceError } from '@wds/errors';

/** A streamed request body of a known length. */
export interface SizedStream {
  stream: Readable;
  length: number;
}

export interface OutboundCall {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: Buffer | SizedStream;
  guard: OutboundGuard;
  /** Until the response headers arrive. */
  timeoutMs: number;
  /** Longest pause while the response body streams. */
  idleTimeoutMs: number;
  signal?: AbortSignal;
}

/** A transport failure as the service reports it: the host and what happened, nothing from the request. */
export function upstreamError(err: unknown, host: string): ServiceError {
  if (err instanceof ServiceError) return err;
  if (err instanceof EffectError) {
    if (err.kind === 'refused') return new ServiceError('UPSTREAM_ERROR', `The outbound guard refused the call to ${host}`, err.details);
    if (err.kind === 'timeout') return new ServiceError('UPSTREAM_ERROR', `${host} did not answer in time`);
    return new ServiceError('UPSTREAM_ERROR', `Could not reach ${host}`, err.details ?? err.message);
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new ServiceError('UPSTREAM_ERROR', `Could not reach ${host}`, code ?? (err instanceof Error ? err.message : undefined));
}

/**
 * Sends the request and resolves with the response once its headers are in (any status). The body is left to the
 * caller, who must read or destroy it; a pause longer than idleTimeoutMs destroys it with UPSTREAM_ERROR.
 */
export async function openExchange(call: OutboundCall): Promise<http.IncomingMessage> {
  const { url, guard, signal } = call;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ServiceError('UPSTREAM_ERROR', `Refused a ${url.protocol} URL`);
  if (signal?.aborted) throw new ServiceError('UPSTREAM_ERROR', `The call to ${url.host} was cancelled`);
  try {
    if (isIP(host)) await guard.resolve(host);
  } catch (err) {
    throw upstreamError(err, url.host);
  }

  return new Promise<http.IncomingMessage>((resolve, reject) => {
    let settled = false;
    let outgoing: http.ClientRequest;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      outgoing?.destroy();
      reject(upstreamError(err, url.host));
    };
    const onAbort = () => fail(new ServiceError('UPSTREAM_ERROR', `The call to ${url.host} was cancelled`));
    const timer = setTimeout(() => fail(new ServiceError('UPSTREAM_ERROR', `${url.host} did not answer within ${call.timeoutMs} ms`)), call.timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    const headers = { ...call.headers };
    if (call.body !== undefined) headers['content-length'] = String(Buffer.isBuffer(call.body) ? call.body.length : call.body.length);
    try {
      outgoing = guardedRequest(url, guard, { method: call.method, headers });
    } catch (err) {
      // Node validates methods and headers synchronously
      return fail(new ServiceError('UPSTREAM_ERROR', `Cannot send the request to ${url.host}`, (err as Error).message));
    }
    outgoing.on('error', fail);
    outgoing.on('response', (res) => {
      if (settled) {
        res.destroy();
        return;
      }
      settled = true;
      cleanup();
      res.setTimeout(call.idleTimeoutMs, () => res.destroy(new ServiceError('UPSTREAM_ERROR', `${url.host} stopped sending the response`)));
      if (signal) {
        const abortBody = () => res.destroy(new ServiceError('UPSTREAM_ERROR', `The call to ${url.host} was cancelled`));
        signal.addEventListener('abort', abortBody, { once: true });
        res.once('close', () => signal.removeEventListener('abort', abortBody));
      }
      resolve(res);
    });

    const body = call.body;
    if (body === undefined || Buffer.isBuffer(body)) {
      outgoing.end(body);
    } else {
      body.stream.once('error', (err) => fail(err));
      body.stream.pipe(outgoing);
    }
  });
}

/** Human size for messages: 10485760 → '10 MB'. */
export function formatBytes(bytes: number): string {
  const MB = 1024 * 1024;
  if (bytes >= MB && bytes % MB === 0) return `${bytes / MB} MB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}

/** The response cap, crossed: UPSTREAM_ERROR (the provider sent too much; the caller's request was fine). */
export const tooLargeError = (maxBytes: number): ServiceError => new ServiceError('UPSTREAM_ERROR', `Provider response exceeds ${formatBytes(maxBytes)}`);

/**
 * Reads the whole body; crossing maxBytes (declared or counted) destroys it and throws tooLargeError. A HEAD
 * answer declares the size of a body it does not carry: pass `head` so that is not held against it.
 */
export async function readCapped(res: http.IncomingMessage, maxBytes: number, host: string, head = false): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (!head && Number.isFinite(declared) && declared > maxBytes) {
    res.destroy();
    throw tooLargeError(maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        res.destroy();
        throw tooLargeError(maxBytes);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    throw upstreamError(err, host);
  }
  if (!res.complete) throw new ServiceError('UPSTREAM_ERROR', `${host} closed the connection before the response was complete`);
  return Buffer.concat(chunks);
}

/** Reads at most maxBytes of the body and drops the rest (error bodies, previews): never throws for size. */
export async function readPrefix(res: http.IncomingMessage, maxBytes: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of res) {
      const buf = chunk as Buffer;
      if (size + buf.length > maxBytes) {
        chunks.push(buf.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(buf);
      size += buf.length;
    }
  } finally {
    res.destroy();
  }
  return { bytes: Buffer.concat(chunks), truncated };
}
