/**
 * OAuth token exchange (RFC 6749 §4.1.3, §6) forwarded to the authentication server: the request is checked,
 * the client credentials are added, and the server's JSON answer is handed back as it is, with its status.
 */
import { ServiceError } from '@wds/errors';

export interface TokenRequest {
  grant_type: string;
  code?: string | undefined;
  redirect_uri?: string | undefined;
  refresh_token?: string | undefined;
  code_verifier?: string | undefined;
}

export interface TokenExchangeDeps {
  /** The authentication server's token endpoint; unset, the exchange is not configured (503). */
  tokenUrl: string | undefined;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  fetch: typeof fetch;
  /** How long the authentication server may take to answer (default 15 s). */
  timeoutMs?: number;
}

/** An OAuth error of our own (RFC 6749 §5.2), answered 400 without asking the authentication server. */
export interface TokenRefusal {
  error: 'invalid_request' | 'unsupported_grant_type';
  description: string;
}

export type TokenExchange = { refused: TokenRefusal } | { refused?: undefined; status: number; body: unknown };

const refuse = (error: TokenRefusal['error'], description: string): TokenExchange => ({ refused: { error, description } });

/**
 * Forwards an authorization_code or refresh_token grant. A malformed request is refused (before the
 * configuration is looked at); an unreachable server or a non-JSON answer is 502 UPSTREAM_ERROR. Success and the
 * server's own OAuth errors come back as `{ status, body }`.
 */
export async function exchangeToken(deps: TokenExchangeDeps, req: TokenRequest): Promise<TokenExchange> {
  const form = new URLSearchParams();
  if (req.grant_type === 'authorization_code') {
    if (!req.code) return refuse('invalid_request', 'code is required');
    if (!req.redirect_uri) return refuse('invalid_request', 'redirect_uri is required');
    let uri: URL;
    try {
      uri = new URL(req.redirect_uri);
    } catch {
      return refuse('invalid_request', 'redirect_uri must be an absolute HTTPS URL');
    }
    if (uri.protocol !== 'https:') return refuse('invalid_request', 'redirect_uri must use https');
    form.set('code', req.code);
    form.set('redirect_uri', req.redirect_uri);
    if (req.code_verifier) form.set('code_verifier', req.code_verifier);
  } else if (req.grant_type === 'refresh_token') {
    if (!req.refresh_token) return refuse('invalid_request', 'refresh_token is required');
    form.set('refresh_token', req.refresh_token);
  } else {
    return refuse('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  }
  if (!deps.tokenUrl) {
    throw new ServiceError('SERVICE_UNAVAILABLE', 'Token exchange is not configured', 'AUTH_TOKEN_URL is not set');
  }
  form.set('grant_type', req.grant_type);
  if (deps.clientId) form.set('client_id', deps.clientId);
  if (deps.clientSecret) form.set('client_secret', deps.clientSecret);
  // Called unbound: a platform fetch may refuse a `this` other than the global object.
  const send = deps.fetch;
  let upstream: Response;
  try {
    upstream = await send(deps.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form,
      redirect: 'manual',
      signal: AbortSignal.timeout(deps.timeoutMs ?? 15_000),
    });
  } catch {
    throw new ServiceError('UPSTREAM_ERROR', 'The authentication server did not answer');
  }
  const text = await upstream.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ServiceError('UPSTREAM_ERROR', 'The authentication server sent a non-JSON answer', `status ${upstream.status}`);
  }
  return { status: upstream.status, body };
}
