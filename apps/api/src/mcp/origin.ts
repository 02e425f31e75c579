import type { Config } from '../config.js';

/**
 * The Origin check of MCP's Streamable HTTP transport (a browser page on another site, or one that reached the
 * service by DNS rebinding, must not drive a session): a request with an Origin that is neither the service's own
 * nor allowed by CORS_ORIGINS is refused with 403 before its credential is looked at. A request without Origin (a
 * desktop or server-side client) passes. The service's own origins come from the settings, never from the request's
 * Host, which a rebinding page chooses: PUBLIC_URL, CONSOLE_URL's origin, and with neither set the loopback address
 * of PORT (`http://127.0.0.1:<PORT>`, `http://localhost:<PORT>`).
 */
export function originAllowed(config: Pick<Config, 'PUBLIC_URL' | 'CONSOLE_URL' | 'PORT' | 'CORS_ORIGINS'>, origin: string | undefined): boolean {
  if (origin === undefined) return true;
  if (config.CORS_ORIGINS === '*') return true;
  return ownOrigins(config).includes(origin) || config.CORS_ORIGINS.includes(origin);
}

function ownOrigins(config: Pick<Config, 'PUBLIC_URL' | 'CONSOLE_URL' | 'PORT'>): string[] {
  const own = [config.PUBLIC_URL, config.CONSOLE_URL && new URL(config.CONSOLE_URL).origin].filter((o): o is string => !!o);
  return own.length > 0 ? own : [`http://127.0.0.1:${config.PORT}`, `http://localhost:${config.PORT}`];
}

/** The refusal, as the SDK's transport words its own (a JSON-RPC error without an id). */
export const originRefused = (): Response =>
  Response.json({ jsonrpc: '2.0', error: { code: -32000, message: 'Forbidden: the Origin header is not allowed (CORS_ORIGINS)' }, id: null }, { status: 403 });
