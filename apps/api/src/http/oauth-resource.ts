import { ServiceError } from '@wds/errors';
import type { Context, Hono } from 'hono';
import type { Config } from '../config.js';
import type { AppEnv } from './env.js';
import { METRICS_PATH } from './metrics.js';

/**
 * OAuth discovery for clients that only know the service's URL (RFC 6750 §3, RFC 9728; the MCP authorization spec):
 * every 401 names the Bearer scheme and, when an authorization server is configured, where the protected-resource
 * metadata naming it is served. docs/http-api.md#oauth-discovery says what is decided here.
 */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';
/** The resource names in the metadata: the whole service, and its MCP endpoint (RFC 9728 §3.1's path-suffixed form). */
const RESOURCE_PATHS = ['', '/mcp'] as const;
const RESOURCE_NAME = 'Workspace data service';
/** A hook delivery's credential is its signature, which no authorization server issues. */
const HOOK_DELIVERY = /^\/api\/v1\/hooks\/[^/]+\/?$/;

/**
 * The authorization server whose access tokens the service takes: the issuer of the JWTs verified with a JWKS
 * (AUTH_JWKS_URL + AUTH_JWT_ISSUER), when that issuer is an http(s) URL, its identifier per RFC 8414. A shared
 * secret (AUTH_JWT_SECRET) names none: nothing a client could discover registers or signs with it.
 */
export function authorizationServerOf(config: Pick<Config, 'AUTH_JWKS_URL' | 'AUTH_JWT_ISSUER'>): string | undefined {
  const issuer = config.AUTH_JWT_ISSUER;
  if (!config.AUTH_JWKS_URL || !issuer) return undefined;
  try {
    const u = new URL(issuer);
    return u.protocol === 'https:' || u.protocol === 'http:' ? issuer : undefined;
  } catch {
    return undefined;
  }
}

/** The origin clients reach the service under: PUBLIC_URL, else the request's own (Host and scheme as received). */
export function publicBaseOf(config: Pick<Config, 'PUBLIC_URL'>, requestUrl: string): string | undefined {
  if (config.PUBLIC_URL) return config.PUBLIC_URL;
  try {
    // Serialized by the URL parser: a Host header that is not a host name gives no origin, never text of its own.
    const { origin } = new URL(requestUrl);
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** What a 401 was answered to: whether a credential was sent, and whether it is one an authorization server issues. */
export interface Refused {
  path: string;
  /** A credential was presented (Authorization, X-Admin-Token, `?token=` of /ws) and refused. */
  tokenSent: boolean;
  requestUrl: string;
}

/**
 * The `WWW-Authenticate` value of a 401: `Bearer`, with `error="invalid_token"` when a credential was sent, and
 * `resource_metadata` when an authorization server is configured and the route takes its tokens (not the admin
 * interface, the metrics token or a hook's signature, which are secrets of their own).
 */
export function bearerChallenge(config: Config, r: Refused): string {
  const params: string[] = [];
  if (r.tokenSent) params.push('error="invalid_token"');
  const takesOAuthTokens = !r.path.startsWith('/admin/') && r.path !== METRICS_PATH && !HOOK_DELIVERY.test(r.path);
  const base = takesOAuthTokens && authorizationServerOf(config) ? publicBaseOf(config, r.requestUrl) : undefined;
  if (base) params.push(`resource_metadata="${base}${PROTECTED_RESOURCE_PATH}"`);
  return params.length ? `Bearer ${params.join(', ')}` : 'Bearer';
}

/** The challenge of a 401 the HTTP app answers (renderError). */
export function challengeOf(c: Context<AppEnv>): string | undefined {
  const config = c.get('services')?.config;
  if (!config) return undefined;
  const tokenSent = c.req.header('authorization') !== undefined || c.req.header('x-admin-token') !== undefined;
  return bearerChallenge(config, { path: c.req.path, tokenSent, requestUrl: c.req.url });
}

/**
 * `GET /.well-known/oauth-protected-resource` (the service) and `…/mcp` (its MCP endpoint): RFC 9728 metadata naming
 * the authorization server; 404 when none is configured.
 */
export function mountProtectedResourceMetadata(app: Hono<AppEnv>, config: Config): void {
  for (const suffix of RESOURCE_PATHS) {
    app.get(`${PROTECTED_RESOURCE_PATH}${suffix}`, (c) => {
      const server = authorizationServerOf(config);
      const base = publicBaseOf(config, c.req.url);
      if (!server || !base) return c.json(new ServiceError('NOT_FOUND', 'Route not found', 'no authorization server is configured').toBody(), 404);
      const scopes = config.AUTH_SCOPE.split(/\s+/).filter(Boolean);
      return c.json({
        resource: `${base}${suffix}`,
        authorization_servers: [server],
        bearer_methods_supported: ['header'],
        ...(scopes.length ? { scopes_supported: scopes } : {}),
        resource_name: RESOURCE_NAME,
      });
    });
  }
}
