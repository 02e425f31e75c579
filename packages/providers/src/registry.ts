/**
 * The providers a workspace may connect, from the PROVIDERS setting (JSON). Each names the one origin its calls go
 * to, the OAuth token endpoint and client used to refresh access tokens, and the path prefixes callers may reach.
 * `drive_workspace` is always present: fields it does not configure take Google's defaults.
 */
import { isProviderName } from '@wds/setup';
import { checkProviderPath } from './paths.js';

export const DRIVE_PROVIDER = 'drive_workspace';

export interface ProviderConfig {
  name: string;
  /** The origin every call goes to (scheme, host, port; no path). */
  baseUrl: string;
  /** OAuth token endpoint for the refresh_token grant. */
  tokenUrl?: string;
  clientId?: string;
  clientSecret?: string;
  /** Request paths must start with one of these (each starts and ends with '/'). */
  allowedPathPrefixes: string[];
}

export type ProviderRegistry = ReadonlyMap<string, ProviderConfig>;

export interface ParseProvidersOptions {
  /**
   * Accept http:// base and token URLs whose host is a loopback IP literal (127.0.0.0/8, ::1) — for tests and local
   * fakes only. Off by default: every other URL must be https.
   */
  allowHttpLoopback?: boolean;
}

const GOOGLE_DRIVE: Omit<ProviderConfig, 'name'> = {
  baseUrl: 'https://www.googleapis.com',
  tokenUrl: 'https://oauth2.googleapis.com/token',
  allowedPathPrefixes: ['/drive/v3/', '/upload/drive/v3/'],
};

const FIELDS = ['base_url', 'token_url', 'client_id', 'client_secret', 'allowed_paths'];

/** A loopback IP literal: 127.0.0.0/8 or ::1 (never a name: a name could resolve anywhere). */
export function isLoopbackLiteral(hostname: string): boolean {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === '::1';
}

/** Checks an absolute service URL (https, or http to a loopback literal when allowed); returns it normalized. */
function checkUrl(value: unknown, where: string, allowHttpLoopback: boolean, originOnly: boolean): string {
  if (typeof value !== 'string' || value === '') throw new Error(`${where}: must be a URL string`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${where}: not an absolute URL`);
  }
  const loopbackHttp = url.protocol === 'http:' && isLoopbackLiteral(url.hostname);
  if (url.protocol !== 'https:' && !(loopbackHttp && allowHttpLoopback)) {
    throw new Error(
      loopbackHttp
        ? `${where}: http is accepted only for loopback test servers when explicitly allowed; use https`
        : `${where}: must be an https URL`,
    );
  }
  if (url.username !== '' || url.password !== '') throw new Error(`${where}: must not contain credentials`);
  if (url.hash !== '' || url.search !== '') throw new Error(`${where}: must not have a query or fragment`);
  if (originOnly) {
    if (url.pathname !== '/') throw new Error(`${where}: must be an origin without a path (put path prefixes in allowed_paths)`);
    return url.origin;
  }
  return url.toString();
}

function optionalString(value: unknown, where: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') throw new Error(`${where}: must be a non-empty string`);
  return value;
}

function checkPrefixes(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.length === 0) throw new Error(`${where}: must be a non-empty array of path prefixes`);
  return value.map((p, i) => {
    if (typeof p !== 'string' || !p.startsWith('/') || !p.endsWith('/')) throw new Error(`${where}[${i}]: must start and end with /`);
    try {
      checkProviderPath(p, [p]);
    } catch (err) {
      throw new Error(`${where}[${i}]: ${(err as { details?: string }).details ?? 'not a plain path'}`);
    }
    return p;
  });
}

function parseEntry(name: string, raw: unknown, opts: ParseProvidersOptions): ProviderConfig {
  const where = `PROVIDERS.${name}`;
  if (!isProviderName(name)) throw new Error(`${where}: provider names are lower-case letters, digits and _, starting with a letter`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${where}: must be an object`);
  const entry = raw as Record<string, unknown>;
  const unknown = Object.keys(entry).filter((k) => !FIELDS.includes(k));
  if (unknown.length > 0) throw new Error(`${where}: unknown field ${unknown.join(', ')} (known: ${FIELDS.join(', ')})`);
  const defaults = name === DRIVE_PROVIDER ? GOOGLE_DRIVE : undefined;
  const allowHttp = opts.allowHttpLoopback ?? false;

  if (entry.base_url === undefined && !defaults) throw new Error(`${where}.base_url: required`);
  if (entry.allowed_paths === undefined && !defaults) throw new Error(`${where}.allowed_paths: required`);
  const baseUrl = entry.base_url === undefined ? defaults!.baseUrl : checkUrl(entry.base_url, `${where}.base_url`, allowHttp, true);
  const tokenUrl = entry.token_url === undefined ? defaults?.tokenUrl : checkUrl(entry.token_url, `${where}.token_url`, allowHttp, false);
  const allowedPathPrefixes =
    entry.allowed_paths === undefined ? [...defaults!.allowedPathPrefixes] : checkPrefixes(entry.allowed_paths, `${where}.allowed_paths`);
  const clientId = optionalString(entry.client_id, `${where}.client_id`);
  const clientSecret = optionalString(entry.client_secret, `${where}.client_secret`);
  if (clientSecret !== undefined && clientId === undefined) throw new Error(`${where}: client_secret is given without client_id`);
  return {
    name,
    baseUrl,
    allowedPathPrefixes,
    ...(tokenUrl !== undefined ? { tokenUrl } : {}),
    ...(clientId !== undefined ? { clientId } : {}),
    ...(clientSecret !== undefined ? { clientSecret } : {}),
  };
}

/**
 * Parses PROVIDERS, e.g. `{"drive_workspace":{"client_id":"…","client_secret":"…"}}`. Fields per provider:
 * base_url (https origin), token_url, client_id, client_secret, allowed_paths (prefixes starting and ending with /).
 * Throws an Error naming the bad field. Nothing configured: drive_workspace with Google's defaults and no client.
 */
export function parseProviders(text: string | undefined, opts: ParseProvidersOptions = {}): Map<string, ProviderConfig> {
  let parsed: unknown = {};
  if (text !== undefined && text.trim() !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error('PROVIDERS: not valid JSON (an object of provider name to settings)');
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('PROVIDERS: must be a JSON object of provider name to settings');
  }
  const registry = new Map<string, ProviderConfig>();
  for (const [name, raw] of Object.entries(parsed)) registry.set(name, parseEntry(name, raw, opts));
  if (!registry.has(DRIVE_PROVIDER)) registry.set(DRIVE_PROVIDER, parseEntry(DRIVE_PROVIDER, {}, opts));
  return registry;
}
