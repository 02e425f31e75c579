/**
 * Headers of provider calls. Callers choose content headers (Content-Type, Accept, Range, If-Match, …); the service
 * owns credentials, routing and framing, so a caller sending one of those is refused (VALIDATION_ERROR listing
 * them) rather than silently overridden. Responses lose Set-Cookie and hop-by-hop headers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { validationError } from '@wds/errors';

/** Refused request headers (lower case). Accept-Encoding: the service always asks for identity, so caps count real bytes. */
export const REFUSED_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'expect',
  'forwarded',
  'via',
  'x-real-ip',
  'accept-encoding',
];
/** Refused request header prefixes (lower case). */
export const REFUSED_HEADER_PREFIXES: readonly string[] = ['proxy-', 'x-forwarded-'];

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Tab, printable ASCII and Latin-1: what Node sends without throwing (no CR/LF). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const MAX_HEADERS = 50;
const MAX_VALUE = 8192;

export const isRefusedHeader = (name: string): boolean => {
  const lower = name.toLowerCase();
  return REFUSED_HEADERS.includes(lower) || REFUSED_HEADER_PREFIXES.some((p) => lower.startsWith(p));
};

/** The caller's headers, checked, with lower-case names; VALIDATION_ERROR for refused, malformed or too many. */
export function checkRequestHeaders(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  const entries = Object.entries(headers ?? {});
  if (entries.length > MAX_HEADERS) throw validationError(`headers: at most ${MAX_HEADERS}`, 'Invalid provider headers');
  const refused = entries.filter(([name]) => isRefusedHeader(name)).map(([name]) => name);
  if (refused.length > 0) {
    throw validationError(`headers: ${refused.join(', ')} may not be sent; the service sets these itself`, 'Invalid provider headers');
  }
  for (const [name, value] of entries) {
    if (!HEADER_NAME.test(name)) throw validationError(`headers: '${name}' is not a valid header name`, 'Invalid provider headers');
    if (typeof value !== 'string' || value.length > MAX_VALUE || !HEADER_VALUE.test(value)) {
      throw validationError(`headers: the value of ${name} must be a string of at most ${MAX_VALUE} characters without line breaks`, 'Invalid provider headers');
    }
    out[name.toLowerCase()] = value;
  }
  return out;
}

const DROPPED_RESPONSE_HEADERS = ['set-cookie', 'set-cookie2', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-connection'];

/** Response headers for the caller: one string per name (repeats joined with ', '), without cookies and hop-by-hop headers. */
export function responseHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROPPED_RESPONSE_HEADERS.includes(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
