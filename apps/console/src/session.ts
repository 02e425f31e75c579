import { ApiError, type WdsClient, createWdsClient } from '@wds/client';
import { computed, signal } from '@preact/signals';

/**
 * The signed-in session: the token lives in memory and in this tab's sessionStorage only (never localStorage, never
 * a cookie), so closing the tab forgets it; signing out revokes a session token at the service first.
 */
const TOKEN_KEY = 'wds.token';

export const token = signal<string | null>(sessionStorage.getItem(TOKEN_KEY));

/** The API client of the current token (the console is served by the service itself: same origin). */
export const api = computed<WdsClient>(() => createWdsClient({ baseUrl: location.origin, ...(token.value ? { token: token.value } : {}) }));

export function signIn(value: string, expiresAt?: string): void {
  sessionStorage.setItem(TOKEN_KEY, value);
  if (expiresAt) sessionStorage.setItem('wds.expires_at', expiresAt);
  token.value = value;
}

/** Forgets the token here; a session token (ses_…) is revoked at the service first, an API key stays valid. */
export async function signOut(): Promise<void> {
  const current = token.value;
  if (current?.startsWith('ses_')) await api.value.POST('/api/v1/auth/logout', {}).catch(() => undefined);
  forget();
}

/** Forgets the token in this tab only. */
export function forget(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem('wds.expires_at');
  sessionStorage.removeItem('wds.refresh');
  token.value = null;
}

/** What a failure says to a person: the service's message and details, or that it could not be reached. */
export const describe = (err: unknown): string =>
  err instanceof ApiError ? `${err.code ?? err.status}: ${err.message.replace(/^\d+ [A-Z_]+: /, '')}` : 'The service could not be reached.';
