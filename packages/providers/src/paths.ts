/**
 * What a caller may put in the path and query of a provider call. The URL is always the provider's base URL plus
 * a checked path: the path cannot name another host, climb out of the allowed prefixes (also not percent-encoded,
 * also not encoded twice), or carry a query or fragment of its own.
 */
import { validationError } from '@wds/errors';

const MAX_PATH = 2048;
/** RFC 3986 path characters: unreserved, sub-delims, ':', '@', '%' (checked below) and '/'. */
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/;
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
const CONTROL = /[\x00-\x1f\x7f]/;

/** Decodes %XX into single characters (byte values); never throws, unlike decodeURIComponent. */
const percentDecode = (text: string): string => text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** The path as written and as a server decoding it once, twice or three times would see it. */
function decodings(path: string): string[] {
  const forms = [path];
  for (let i = 0; i < 3; i += 1) {
    const next = percentDecode(forms[forms.length - 1]!);
    if (next === forms[forms.length - 1]) break;
    forms.push(next);
  }
  return forms;
}

/**
 * Returns `path` when it is a plain path under one of `allowedPrefixes`; else VALIDATION_ERROR naming the rule.
 */
export function checkProviderPath(path: unknown, allowedPrefixes: readonly string[]): string {
  const bad = (rule: string) => validationError(`path: ${rule}`, 'Invalid provider path');
  if (typeof path !== 'string' || path === '') throw bad('required, a string');
  if (path.length > MAX_PATH) throw bad(`at most ${MAX_PATH} characters`);
  if (!path.startsWith('/')) throw bad("must start with / (a path on the provider's base URL, not a URL)");
  if (path.startsWith('//')) throw bad('must not start with // (that names another host)');
  if (path.includes('\\')) throw bad('must not contain a backslash');
  if (!PATH_CHARS.test(path)) {
    throw bad('only URL path characters are allowed (no spaces, ?, #, quotes or non-ASCII; percent-encode them, and pass query parameters in query)');
  }
  if (BAD_PERCENT.test(path)) throw bad('malformed percent-encoding (% must be followed by two hex digits)');
  for (const form of decodings(path)) {
    if (form.includes('\\')) throw bad('must not contain a backslash (also percent-encoded)');
    if (CONTROL.test(form)) throw bad('must not contain control characters (also percent-encoded)');
    if (form.split('/').some((segment) => segment === '.' || segment === '..')) {
      throw bad('must not contain . or .. segments (also percent-encoded)');
    }
  }
  if (!allowedPrefixes.some((prefix) => path.startsWith(prefix))) throw bad(`must start with one of ${allowedPrefixes.join(', ')}`);
  return path;
}

export type QueryValue = string | number | boolean | ReadonlyArray<string | number | boolean> | undefined | null;
export type ProviderQuery = string | URLSearchParams | Readonly<Record<string, QueryValue>>;

/**
 * The URL of a call: the base URL's origin, the checked path, the query encoded by URLSearchParams. A final check
 * makes sure the URL parser kept both exactly as given.
 */
export function buildProviderUrl(baseUrl: string, path: string, query: ProviderQuery | undefined): URL {
  const origin = new URL(baseUrl).origin;
  const url = new URL(`${origin}${path}`);
  const params = new URLSearchParams();
  if (typeof query === 'string') {
    for (const [k, v] of new URLSearchParams(query)) params.append(k, v);
  } else if (query instanceof URLSearchParams) {
    for (const [k, v] of query) params.append(k, v);
  } else if (query) {
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      if (name === '') throw validationError('query: parameter names must not be empty', 'Invalid provider query');
      for (const v of Array.isArray(value) ? value : [value]) params.append(name, String(v));
    }
  }
  const search = params.toString();
  url.search = search;
  if (url.origin !== origin || url.pathname !== path) throw validationError('path: not a plain path', 'Invalid provider path');
  return url;
}
