import type { Config } from './config.js';

/**
 * Where login links point: the console's page that redeems a link's code (`POST /api/v1/auth/login-links/redeem`),
 * under CONSOLE_URL, else under this service's own address on the loopback (the embedded default, where the
 * service serves the console itself).
 */
export const LOGIN_PAGE_PATH = '/console/login';

/** Where the authorization server sends the person back (the console's page that finishes the flow). */
export const CALLBACK_PAGE_PATH = '/console/callback';

export const loginPageUrl = (config: Pick<Config, 'CONSOLE_URL' | 'PORT'>): string =>
  `${config.CONSOLE_URL ?? `http://127.0.0.1:${config.PORT}`}${LOGIN_PAGE_PATH}`;

/**
 * CONSOLE_URL as start-up accepts it: an http(s) URL with a host and maybe a path prefix, without credentials, a
 * query or a fragment (the link's code goes in the fragment); a trailing `/` is dropped, so `<base>/console/login`
 * has one slash.
 */
export function parseConsoleUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new Error(`${value} is not a URL (http(s)://host[:port][/path])`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('must be an http or https URL');
  if (u.username || u.password || value.includes('?') || value.includes('#')) {
    throw new Error('must have no credentials, query or fragment: http(s)://host[:port][/path]');
  }
  return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
}
