/**
 * Calls to a provider's API on behalf of a workspace, with the workspace's credential injected and never shown:
 * the URL is the provider's base URL plus a checked path (paths.ts), caller headers are checked (headers.ts), a 401
 * refreshes the token and retries once, responses are capped, and redirects are either returned untouched or
 * followed to https targets only, without the provider's Authorization once they leave its origin.
 */
import type http from 'node:http';
import { Readable, Transform } from 'node:stream';
import { type Db, newId } from '@wds/db';
import type { OutboundGuard } from '@wds/effect-runner';
import { ServiceError, validationError } from '@wds/errors';
import type { Sealer } from '@wds/setup';
import { type BlobStore, BlobTooLargeError, checkFilename, type FileView, insertFile, type PutResult } from '@wds/storage';
import { ProviderAuth, USER_AGENT } from './auth.js';
import { reconnectHint } from './credential.js';
import { checkRequestHeaders, responseHeaders } from './headers.js';
import { buildProviderUrl, checkProviderPath, type ProviderQuery } from './paths.js';
import { isLoopbackLiteral, type ProviderRegistry } from './registry.js';
import { openExchange, readCapped, readPrefix, type SizedStream, tooLargeError, upstreamError } from './transport.js';

/** The response cap of the SaaS proxy. */
export const PROXY_MAX_BYTES = 10 * 1024 * 1024;
/** The cap of saas-proxy-download (and the default of Drive imports). */
export const DOWNLOAD_MAX_BYTES = 100 * 1024 * 1024;
export const MAX_REDIRECTS = 5;
const ERROR_BODY_MAX_BYTES = 64 * 1024;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const REDIRECTS = [301, 302, 303, 307, 308];

export type RequestBody = string | Uint8Array | SizedStream;

export interface ProviderRequest {
  workspaceId: string;
  provider: string;
  method: string;
  /** A path on the provider's base URL under one of its allowed prefixes, e.g. /drive/v3/files. */
  path: string;
  query?: ProviderQuery;
  headers?: Readonly<Record<string, string>>;
  /** A stream body cannot be replayed: a 401 then refreshes the token but is not retried. */
  body?: RequestBody;
  /** 'return' (default): a 3xx comes back untouched. 'follow-https': up to 5 redirects, to https targets only. */
  redirects?: 'return' | 'follow-https';
  signal?: AbortSignal;
  /**
   * For answers shown to members (the SaaS proxy): wherever the provider's answer repeats the workspace's token (an
   * echo, a debug field, an error quoting the request), in its body or headers, it reads `[redacted]`. Not for
   * stored downloads, whose bytes are a file's.
   */
  redactCredential?: boolean;
}

export interface CappedRequest extends ProviderRequest {
  /** Response body cap; crossing it is UPSTREAM_ERROR 'Provider response exceeds …'. */
  maxBytes: number;
}

export interface ProviderResponse {
  status: number;
  /** Without Set-Cookie and hop-by-hop headers. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface ProviderStream {
  status: number;
  headers: Record<string, string>;
  /** Errors with UPSTREAM_ERROR when it crosses maxBytes; read it to the end or destroy it. */
  body: Readable;
}

export interface DownloadRequest extends CappedRequest {
  blobs: BlobStore;
  file: {
    filename: string;
    /** Default: the response's Content-Type. */
    contentType?: string;
    metadata?: Record<string, unknown>;
    createdBy: string | null;
  };
}

export type DownloadResult =
  | { ok: true; status: number; headers: Record<string, string>; file: FileView }
  | { ok: false; status: number; headers: Record<string, string>; error_body: string };

export interface ProviderClientOptions {
  db: Db;
  sealer: Sealer;
  registry: ProviderRegistry;
  /** Every connection (API, token endpoint, redirect targets) goes through it. */
  guard: OutboundGuard;
  /** Follow redirects to http:// loopback IP literals too. Tests only; never in production. */
  allowHttpLoopback?: boolean;
  /** Until response headers arrive (default 30 s). */
  timeoutMs?: number;
  /** Longest pause in a response body (default 60 s). */
  idleTimeoutMs?: number;
  /** Built from the same options when not given. */
  auth?: ProviderAuth;
}

const CONTENT_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;\s*[a-z0-9_.-]+=("[^"\r\n]*"|[a-z0-9_.+-]+))*$/i;

interface Prepared {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | SizedStream | undefined;
}

export class ProviderClient {
  readonly auth: ProviderAuth;
  private readonly db: Db;
  private readonly guard: OutboundGuard;
  private readonly allowHttpLoopback: boolean;
  private readonly timeoutMs: number;
  private readonly idleTimeoutMs: number;

  constructor(opts: ProviderClientOptions) {
    this.db = opts.db;
    this.guard = opts.guard;
    this.allowHttpLoopback = opts.allowHttpLoopback ?? false;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 60_000;
    this.auth = opts.auth ?? new ProviderAuth({ db: opts.db, sealer: opts.sealer, registry: opts.registry, guard: opts.guard });
  }

  /** The whole response, at most maxBytes. */
  async request(req: CappedRequest): Promise<ProviderResponse> {
    const { res, host, tokens } = await this.exchange(req);
    const body = await readCapped(res, req.maxBytes, host, req.method.toUpperCase() === 'HEAD');
    const headers = responseHeaders(res.headers);
    if (!req.redactCredential) return { status: res.statusCode ?? 0, headers, body };
    return { status: res.statusCode ?? 0, headers: redactedHeaders(headers, tokens), body: redactedBytes(body, tokens) };
  }

  /** The response with its body as a stream (downloads); a declared Content-Length over maxBytes fails at once. */
  async stream(req: CappedRequest): Promise<ProviderStream> {
    const { res, host } = await this.exchange(req);
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > req.maxBytes) {
      res.destroy();
      throw tooLargeError(req.maxBytes);
    }
    let size = 0;
    const capped = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > req.maxBytes) done(tooLargeError(req.maxBytes));
        else done(null, chunk);
      },
      flush(done) {
        done(res.complete ? null : new ServiceError('UPSTREAM_ERROR', `${host} closed the connection before the response was complete`));
      },
    });
    res.on('error', (err) => capped.destroy(upstreamError(err, host)));
    capped.on('close', () => res.destroy());
    res.pipe(capped);
    return { status: res.statusCode ?? 0, headers: responseHeaders(res.headers), body: capped };
  }

  /**
   * Streams a 2xx body into the blob store (at most maxBytes) and records the file. Crossing the cap, a broken
   * connection or a failed insert leave no blob and no file row. A non-2xx answer stores nothing and comes back with
   * its (truncated) body as text.
   */
  async downloadToStorage(req: DownloadRequest): Promise<DownloadResult> {
    const problem = checkFilename(req.file.filename);
    if (problem) throw validationError(`filename: ${problem}`);
    const { res, host, tokens } = await this.exchange(req);
    const status = res.statusCode ?? 0;
    const headers = req.redactCredential ? redactedHeaders(responseHeaders(res.headers), tokens) : responseHeaders(res.headers);
    if (status < 200 || status > 299) {
      const { bytes } = await readPrefix(res, ERROR_BODY_MAX_BYTES).catch(() => ({ bytes: Buffer.alloc(0) }));
      return { ok: false, status, headers, error_body: (req.redactCredential ? redactedBytes(bytes, tokens) : bytes).toString('utf8') };
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > req.maxBytes) {
      res.destroy();
      throw tooLargeError(req.maxBytes);
    }
    let blob: PutResult | undefined;
    try {
      blob = await req.blobs.put(res, { maxBytes: req.maxBytes, ...(req.signal ? { signal: req.signal } : {}) });
      if (!res.complete) throw new ServiceError('UPSTREAM_ERROR', `${host} closed the connection before the download was complete`);
      const given = req.file.contentType;
      const answered = headers['content-type'];
      const contentType = given ?? (answered && CONTENT_TYPE.test(answered) ? answered : 'application/octet-stream');
      const file = await insertFile(this.db, {
        id: newId(),
        workspaceId: req.workspaceId,
        filename: req.file.filename,
        contentType,
        size: blob.size,
        sha256: blob.sha256,
        blobKey: blob.key,
        metadata: req.file.metadata ?? {},
        createdBy: req.file.createdBy,
      });
      return { ok: true, status, headers, file };
    } catch (err) {
      res.destroy();
      if (blob) await req.blobs.delete(blob.key).catch(() => undefined);
      if (err instanceof BlobTooLargeError) throw tooLargeError(req.maxBytes);
      if (err instanceof ServiceError || res.complete || req.signal?.aborted) throw err;
      throw new ServiceError('UPSTREAM_ERROR', `${host} closed the connection before the download was complete`);
    }
  }

  /**
   * Checks, authenticates, sends; handles a 401 and (when asked) redirects. The body is the caller's to read;
   * `tokens` are the credentials it sent (the refreshed one too), for redaction.
   */
  private async exchange(req: ProviderRequest): Promise<{ res: http.IncomingMessage; host: string; tokens: string[] }> {
    const config = this.auth.provider(req.provider);
    const prepared = this.prepare(req, config.baseUrl, config.allowedPathPrefixes);
    const replayable = !isSizedStream(prepared.body);
    let token = await this.auth.accessToken(req.workspaceId, req.provider);
    const tokens = token === undefined ? [] : [token];
    let res = await this.send(prepared, token, req.signal);
    if (res.statusCode === 401) {
      res.destroy();
      token = await this.auth.accessToken(req.workspaceId, req.provider, { rejected: token });
      if (token !== undefined) tokens.push(token);
      if (!replayable) {
        throw new ServiceError('UPSTREAM_ERROR', `${req.provider} refused the workspace credential; it was refreshed, send the request again`);
      }
      res = await this.send(prepared, token, req.signal);
      if (res.statusCode === 401) {
        res.destroy();
        throw new ServiceError('UPSTREAM_ERROR', `${req.provider} refused the workspace credential (HTTP 401) after a refresh`, reconnectHint(req.workspaceId, req.provider));
      }
    }
    if (req.redirects === 'follow-https') return { ...(await this.follow(res, prepared, token, req.signal)), tokens };
    return { res, host: prepared.url.host, tokens };
  }

  private prepare(req: ProviderRequest, baseUrl: string, prefixes: readonly string[]): Prepared {
    const method = typeof req.method === 'string' ? req.method.toUpperCase() : '';
    if (!METHODS.includes(method)) throw validationError(`method: one of ${METHODS.join(', ')}`, 'Invalid provider request');
    const path = checkProviderPath(req.path, prefixes);
    const url = buildProviderUrl(baseUrl, path, req.query);
    const headers = checkRequestHeaders(req.headers);
    const body = normalizeBody(req.body);
    if (body !== undefined && (method === 'GET' || method === 'HEAD')) throw validationError(`body: a ${method} request carries no body`, 'Invalid provider request');
    return { url, method, headers, body };
  }

  private send(p: Prepared, token: string | undefined, signal: AbortSignal | undefined): Promise<http.IncomingMessage> {
    const headers: Record<string, string> = { 'user-agent': USER_AGENT, ...p.headers, 'accept-encoding': 'identity' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    return openExchange({
      url: p.url,
      method: p.method,
      headers,
      ...(p.body !== undefined ? { body: p.body } : {}),
      guard: this.guard,
      timeoutMs: this.timeoutMs,
      idleTimeoutMs: this.idleTimeoutMs,
      ...(signal ? { signal } : {}),
    });
  }

  /** Follows up to MAX_REDIRECTS redirects to https (or, in tests, loopback http); Authorization only to the provider's origin. */
  private async follow(first: http.IncomingMessage, prepared: Prepared, token: string, signal: AbortSignal | undefined) {
    const origin = prepared.url.origin;
    let res = first;
    let current = prepared;
    for (let hops = 0; REDIRECTS.includes(res.statusCode ?? 0) && res.headers.location !== undefined; hops += 1) {
      const location = res.headers.location;
      res.destroy();
      if (hops === MAX_REDIRECTS) throw new ServiceError('UPSTREAM_ERROR', `The provider redirected more than ${MAX_REDIRECTS} times`);
      let next: URL;
      try {
        next = new URL(location, current.url);
      } catch {
        throw new ServiceError('UPSTREAM_ERROR', 'The provider redirected to an invalid URL');
      }
      const loopbackHttp = next.protocol === 'http:' && this.allowHttpLoopback && isLoopbackLiteral(next.hostname);
      if (next.protocol !== 'https:' && !loopbackHttp) {
        throw new ServiceError('UPSTREAM_ERROR', `Refused to follow a redirect to a non-https URL (${next.protocol}//${next.host})`);
      }
      if (next.username !== '' || next.password !== '') throw new ServiceError('UPSTREAM_ERROR', 'Refused to follow a redirect to a URL with credentials');
      next.hash = '';
      const status = res.statusCode ?? 0;
      const toGet = status === 303 || ((status === 301 || status === 302) && current.method !== 'GET' && current.method !== 'HEAD');
      if (!toGet && isSizedStream(current.body)) throw new ServiceError('UPSTREAM_ERROR', 'The provider redirected a streamed request body, which cannot be sent again');
      const headers = { ...current.headers };
      if (toGet) delete headers['content-type'];
      current = { url: next, method: toGet ? (current.method === 'HEAD' ? 'HEAD' : 'GET') : current.method, headers, body: toGet ? undefined : current.body };
      // The provider's token goes to the provider's origin only, never to a download host or anywhere else.
      res = await this.send(current, next.origin === origin ? token : undefined, signal);
    }
    return { res, host: current.url.host };
  }
}

const REDACTED = Buffer.from('[redacted]');

/** `bytes` with every occurrence of a token replaced by `[redacted]` (tokens shorter than 8 bytes are no secret). */
export function redactedBytes(bytes: Buffer, tokens: readonly string[]): Buffer {
  let out = bytes;
  for (const token of new Set(tokens)) {
    const needle = Buffer.from(token);
    if (needle.length < 8) continue;
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = out.indexOf(needle, from); at >= 0; at = out.indexOf(needle, from)) {
      parts.push(out.subarray(from, at), REDACTED);
      from = at + needle.length;
    }
    if (parts.length > 0) out = Buffer.concat([...parts, out.subarray(from)]);
  }
  return out;
}

function redactedHeaders(headers: Record<string, string>, tokens: readonly string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, redactedBytes(Buffer.from(v), tokens).toString()]));
}

function isSizedStream(body: unknown): body is SizedStream {
  return typeof body === 'object' && body !== null && !Buffer.isBuffer(body) && 'stream' in body;
}

function normalizeBody(body: RequestBody | undefined): Buffer | SizedStream | undefined {
  if (body === undefined) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (isSizedStream(body) && body.stream instanceof Readable && Number.isSafeInteger(body.length) && body.length >= 0) return body;
  throw validationError('body: a string, bytes, or { stream, length }', 'Invalid provider request');
}
