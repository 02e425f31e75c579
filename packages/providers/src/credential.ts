/**
 * The stored value of a provider credential: a bare access token, or JSON
 * `{ access_token, refresh_token?, expires_at? (ISO text or epoch seconds), client_id?, client_secret? }`.
 * Errors about it never repeat any part of it.
 */
import { ServiceError } from '@wds/errors';

export interface StoredCredential {
  accessToken?: string;
  refreshToken?: string;
  /** Epoch milliseconds. */
  expiresAt?: number;
  clientId?: string;
  clientSecret?: string;
  /** Other fields of a JSON value, kept when the value is written back. */
  extra: Record<string, unknown>;
}

/** What may go into an Authorization header: visible ASCII, no spaces (no header injection). */
const TOKEN = /^[\x21-\x7e]{1,8192}$/;

export const reconnectHint = (workspaceId: string, provider: string): string =>
  `an operator connects it with PUT /admin/v1/workspaces/${workspaceId}/credentials/${provider}`;

/** 409 naming the provider the workspace has not connected. */
export const missingCredential = (workspaceId: string, provider: string): ServiceError =>
  new ServiceError('CONFLICT', `Workspace has no credential for provider ${provider}; ${reconnectHint(workspaceId, provider)}`);

function unusable(workspaceId: string, provider: string, why: string): ServiceError {
  return new ServiceError('CONFLICT', `The stored credential for provider ${provider} is not usable: ${why}`, reconnectHint(workspaceId, provider));
}

function parseExpiry(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return value * 1000;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value) * 1000;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return ms;
  }
  return Number.NaN;
}

export function parseCredential(value: string, workspaceId: string, provider: string): StoredCredential {
  const text = value.trim();
  if (!text.startsWith('{')) {
    if (!TOKEN.test(text)) throw unusable(workspaceId, provider, 'a bare access token must be visible ASCII without spaces');
    return { accessToken: text, extra: {} };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw unusable(workspaceId, provider, 'it starts with { but is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw unusable(workspaceId, provider, 'not a JSON object');
  const { access_token, refresh_token, expires_at, client_id, client_secret, ...extra } = parsed as Record<string, unknown>;
  const str = (v: unknown, field: string, token: boolean): string | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || (token ? !TOKEN.test(v) : v === '')) throw unusable(workspaceId, provider, `${field} must be a non-empty string${token ? ' of visible ASCII' : ''}`);
    return v;
  };
  const cred: StoredCredential = { extra };
  const accessToken = str(access_token, 'access_token', true);
  const refreshToken = str(refresh_token, 'refresh_token', false);
  const clientId = str(client_id, 'client_id', false);
  const clientSecret = str(client_secret, 'client_secret', false);
  const expiresAt = parseExpiry(expires_at);
  if (Number.isNaN(expiresAt)) throw unusable(workspaceId, provider, 'expires_at must be ISO 8601 text or epoch seconds');
  if (accessToken === undefined && refreshToken === undefined) throw unusable(workspaceId, provider, 'it has neither access_token nor refresh_token');
  if (accessToken !== undefined) cred.accessToken = accessToken;
  if (refreshToken !== undefined) cred.refreshToken = refreshToken;
  if (expiresAt !== undefined) cred.expiresAt = expiresAt;
  if (clientId !== undefined) cred.clientId = clientId;
  if (clientSecret !== undefined) cred.clientSecret = clientSecret;
  return cred;
}

/** The JSON form written back after a refresh (expires_at as ISO text). */
export function serializeCredential(cred: StoredCredential): string {
  return JSON.stringify({
    ...cred.extra,
    access_token: cred.accessToken,
    ...(cred.refreshToken !== undefined ? { refresh_token: cred.refreshToken } : {}),
    ...(cred.expiresAt !== undefined ? { expires_at: new Date(cred.expiresAt).toISOString() } : {}),
    ...(cred.clientId !== undefined ? { client_id: cred.clientId } : {}),
    ...(cred.clientSecret !== undefined ? { client_secret: cred.clientSecret } : {}),
  });
}

/** Replaces every occurrence of the given secrets in `text` (for provider error text shown to callers). */
export function redact(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out;
}
