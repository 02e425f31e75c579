import { type JWTPayload, type JWTVerifyGetKey, createRemoteJWKSet, jwtVerify } from 'jose';

export interface JwtConfig {
  jwksUrl?: string | undefined;
  secret?: string | undefined;
  issuer?: string | undefined;
  audience?: string | undefined;
}

export interface JwtClaims {
  sub: string;
  /** `iss`: with AUTH_JWT_ISSUER set, always that one (checked). */
  issuer: string | undefined;
  email: string | undefined;
  /** `email_verified` is true (or the string "true", as some providers send it): the provider vouches for `email`. */
  emailVerified: boolean;
  name: string | undefined;
  /** Present on a scoped JWT: the only workspace it may reach. */
  workspaceId: string | undefined;
  /** From `exp`; null when the token has none. */
  expiresAt: Date | null;
}

export type JwtVerifier = (token: string) => Promise<JwtClaims>;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/**
 * Returns undefined when no JWT source is configured: then JWTs are simply not accepted. A JWKS needs its issuer:
 * one key set may sign for many issuers (a multi-tenant identity provider), and a subject is unique only within its
 * issuer, so without it anyone with a tenant of their own could present another tenant's subject or email.
 */
export function createJwtVerifier(cfg: JwtConfig): JwtVerifier | undefined {
  if (cfg.jwksUrl && !cfg.issuer) throw new Error('AUTH_JWKS_URL needs AUTH_JWT_ISSUER (the one issuer whose tokens are accepted)');
  let key: Uint8Array | JWTVerifyGetKey;
  if (cfg.jwksUrl) key = createRemoteJWKSet(new URL(cfg.jwksUrl));
  else if (cfg.secret) key = new TextEncoder().encode(cfg.secret);
  else return undefined;
  const options = {
    ...(cfg.issuer ? { issuer: cfg.issuer } : {}),
    ...(cfg.audience ? { audience: cfg.audience } : {}),
    // HS256 only with a shared secret; asymmetric algorithms only with a JWKS (no algorithm confusion).
    algorithms: cfg.jwksUrl ? ['RS256', 'ES256', 'EdDSA', 'PS256'] : ['HS256'],
  };
  return async (token) => {
    const { payload } =
      key instanceof Uint8Array ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options);
    return claimsOf(payload);
  };
}

function claimsOf(p: JWTPayload): JwtClaims {
  const sub = str(p.sub);
  if (!sub) throw new Error('JWT has no sub');
  const expiresAt = typeof p.exp === 'number' ? new Date(p.exp * 1000) : null;
  return {
    sub,
    issuer: str(p.iss),
    email: str(p.email),
    emailVerified: p.email_verified === true || p.email_verified === 'true',
    name: str(p.name),
    workspaceId: str(p.workspace_id),
    expiresAt,
  };
}
