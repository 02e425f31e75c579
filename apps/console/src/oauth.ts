import { ok, type View } from '@wds/client';
import { api, signIn } from './session.js';

/**
 * The authorization-code flow with PKCE (RFC 7636), where the service has an authorization server configured
 * (`GET /api/v1/auth/sign-in-methods`): the page sends the person to the server with a challenge and a state, and
 * back at /console/callback exchanges the code through `POST /api/v1/auth/token`, which adds the client secret (the
 * page never holds it). The verifier and the state wait in this tab's sessionStorage meanwhile; the access token (a
 * JWT) and the refresh token live there too, and nowhere else.
 */
type Flow = NonNullable<View<'SignInMethods'>['authorization_code']>;
const PENDING = 'wds.pkce';
const REFRESH = 'wds.refresh';

const base64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const random = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

/** Leaves for the authorization server. */
export async function startAuthorization(flow: Flow): Promise<void> {
  const verifier = random();
  const state = random();
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, redirect_uri: flow.redirect_uri }));
  const to = new URL(flow.authorization_endpoint);
  const q = { response_type: 'code', client_id: flow.client_id, redirect_uri: flow.redirect_uri, scope: flow.scope, state, code_challenge: challenge, code_challenge_method: 'S256' };
  for (const [k, v] of Object.entries(q)) to.searchParams.set(k, v);
  location.assign(to.toString());
}

type TokenAnswer = { access_token?: string; refresh_token?: string; expires_in?: number; error?: string; error_description?: string };

const keep = (answer: TokenAnswer) => {
  if (!answer.access_token) throw new Error(answer.error_description ?? answer.error ?? 'The authorization server gave no token.');
  if (answer.refresh_token) sessionStorage.setItem(REFRESH, answer.refresh_token);
  signIn(answer.access_token, answer.expires_in ? new Date(Date.now() + answer.expires_in * 1000).toISOString() : undefined);
  scheduleRefresh(answer.expires_in);
};

/** Back at /console/callback: checks the state, exchanges the code, signs in. Throws with a sentence to show. */
export async function finishAuthorization(params: URLSearchParams): Promise<void> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as { verifier: string; state: string; redirect_uri: string } | null;
  sessionStorage.removeItem(PENDING);
  if (params.get('error')) throw new Error(`The authorization server refused: ${params.get('error_description') ?? params.get('error')}`);
  const code = params.get('code');
  if (!pending || !code || params.get('state') !== pending.state) throw new Error('This sign-in was not started here, or it was started again elsewhere. Start again.');
  const answer = (await api.value
    .POST('/api/v1/auth/token', { body: { grant_type: 'authorization_code', code, redirect_uri: pending.redirect_uri, code_verifier: pending.verifier } })
    .then((r) => r.data ?? r.error)) as TokenAnswer;
  keep(answer);
}

let timer: ReturnType<typeof setTimeout> | undefined;
/** A minute before the access token ends (or halfway, if it is short), the refresh token gets a new one. */
export function scheduleRefresh(expiresIn: number | undefined): void {
  clearTimeout(timer);
  if (!expiresIn || !sessionStorage.getItem(REFRESH)) return;
  timer = setTimeout(refresh, Math.max(expiresIn > 120 ? (expiresIn - 60) * 1000 : (expiresIn * 1000) / 2, 1000));
}

async function refresh(): Promise<void> {
  const refresh_token = sessionStorage.getItem(REFRESH);
  if (!refresh_token) return;
  try {
    keep((await ok(api.value.POST('/api/v1/auth/token', { body: { grant_type: 'refresh_token', refresh_token } }))) as TokenAnswer);
  } catch {
    // The token runs out; the next call's 401 sends the person to sign in again.
  }
}

/** After a reload: the refresh of the token this tab holds, if it came with a refresh token. */
export function resumeRefresh(): void {
  const at = Date.parse(sessionStorage.getItem('wds.expires_at') ?? '');
  if (!Number.isNaN(at)) scheduleRefresh(Math.max(Math.round((at - Date.now()) / 1000), 1));
}
