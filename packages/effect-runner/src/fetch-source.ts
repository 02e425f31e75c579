/**
 * fetchSource: a workflow Fetch input source. The same guard as effects, a timeout of at most 60 s, a 5 MiB
 * response cap, no redirects and no retries; anything but a 2xx status is an error.
 */
import { EffectError } from './errors.js';
import type { OutboundGuard } from './guard.js';
import { HEADER_NAME, INVALID_HEADER_VALUE, parseTargetUrl, sendRequest } from './http.js';

export interface FetchSpec {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** Sent for methods other than GET/HEAD: a string as text/plain, anything else as JSON. */
  body?: unknown;
  timeout_secs?: number;
}

export interface FetchSourceOptions {
  guard: OutboundGuard;
  /** Response body cap. Default 5 MiB. */
  maxBytes?: number;
  /** Upper bound of the timeout (timeout_secs only shortens it). Default 60 s. */
  maxTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface FetchSourceResult {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export const FETCH_MAX_BYTES = 5 * 1024 * 1024;
export const FETCH_MAX_TIMEOUT_MS = 60_000;
const FETCH_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];
const RESERVED = ['host', 'content-length', 'transfer-encoding', 'connection'];

/** The request headers of a Fetch source, checked (EffectError 'invalid' on a bad or reserved name or value). */
function checkedHeaders(given: Record<string, string> | undefined): Record<string, string> {
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(given ?? {})) {
    if (!HEADER_NAME.test(name)) throw new EffectError('invalid', `fetch header '${name}' is not a valid header name`);
    if (RESERVED.includes(name.toLowerCase())) throw new EffectError('invalid', `fetch header ${name} is set by the runner`);
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (INVALID_HEADER_VALUE.test(text)) throw new EffectError('invalid', `fetch header ${name}: the value contains characters not allowed in a header`);
    headers[name.toLowerCase()] = text;
  }
  return headers;
}

/**
 * A workflow Fetch input source: same guard, timeout min(timeout_secs, 60 s), 5 MiB cap, no redirects; a
 * non-2xx status throws EffectError kind 'http_status' (with .status). Returns the parsed body (JSON when the
 * response is JSON, else text).
 */
export async function fetchSource(spec: FetchSpec, opts: FetchSourceOptions): Promise<FetchSourceResult> {
  const url = parseTargetUrl(spec.url);
  const method = (spec.method ?? 'GET').toUpperCase();
  if (!FETCH_METHODS.includes(method)) throw new EffectError('invalid', `fetch method must be one of ${FETCH_METHODS.join(', ')}`);
  const maxTimeoutMs = opts.maxTimeoutMs ?? FETCH_MAX_TIMEOUT_MS;
  const timeoutSecs = spec.timeout_secs ?? undefined;
  if (timeoutSecs !== undefined && !(typeof timeoutSecs === 'number' && timeoutSecs > 0)) throw new EffectError('invalid', 'fetch timeout_secs must be a positive number');
  const timeoutMs = timeoutSecs === undefined ? maxTimeoutMs : Math.min(timeoutSecs * 1000, maxTimeoutMs);

  const headers = checkedHeaders(spec.headers);
  headers.accept ??= 'application/json, text/plain;q=0.9, */*;q=0.8';
  headers['user-agent'] ??= 'wds-effect-runner';
  let body: Buffer | undefined;
  if (spec.body !== undefined && spec.body !== null) {
    if (method === 'GET' || method === 'HEAD') throw new EffectError('invalid', `a ${method} fetch carries no body`);
    const isText = typeof spec.body === 'string';
    body = Buffer.from(isText ? (spec.body as string) : JSON.stringify(spec.body));
    headers['content-type'] ??= isText ? 'text/plain; charset=utf-8' : 'application/json';
    headers['content-length'] = String(body.length);
  }

  const response = await sendRequest({ url, method, headers, body, timeoutMs, maxBytes: opts.maxBytes ?? FETCH_MAX_BYTES, guard: opts.guard, signal: opts.signal });
  if (response.status < 200 || response.status >= 300) {
    const location = response.headers.location ? ` (redirect to ${response.headers.location} not followed)` : '';
    const error = new EffectError('http_status', `${url.host} answered ${response.status}${location}`, typeof response.body === 'string' ? response.body.slice(0, 500) : JSON.stringify(response.body)?.slice(0, 500));
    error.status = response.status;
    throw error;
  }
  return response;
}
