import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { finishAuthorization, startAuthorization } from '../oauth.js';
import { BASE, navigate } from '../router.js';
import { api, describe, forget, signIn } from '../session.js';

type Flow = NonNullable<View<'SignInMethods'>['authorization_code']>;

/**
 * /console/login: a login link's page (its code is in the fragment, which no server or log sees: it leaves the
 * address bar before anything else), a token pasted in (an API key, a session token, a JWT), or — where an
 * authorization server is configured — single sign-on, which comes back to /console/callback.
 */
export function SignIn() {
  const state = useSignal<{ title: string; text: string }>({ title: 'Sign in', text: 'Open the login link you were given, or paste an API key.' });
  const pasted = useSignal('');
  const flow = useSignal<Flow | null>(null);

  useEffect(() => {
    ok(api.value.GET('/api/v1/auth/sign-in-methods')).then(
      (m) => (flow.value = m.authorization_code),
      () => undefined, // only the other ways, then
    );
  }, []);

  // Back from the authorization server: the code and the state are in the query string (RFC 6749 §4.1.2).
  useEffect(() => {
    if (location.pathname !== `${BASE}/callback`) return;
    const params = new URLSearchParams(location.search);
    history.replaceState(null, '', `${BASE}/login`);
    state.value = { title: 'Signing in…', text: 'One moment.' };
    finishAuthorization(params).then(
      () => navigate(BASE),
      (err) => (state.value = { title: 'Sign-in failed', text: err instanceof Error ? err.message : describe(err) }),
    );
  }, []);

  useEffect(() => {
    const code = new URLSearchParams(location.hash.slice(1)).get('code');
    if (location.hash) history.replaceState(null, '', location.pathname);
    if (!code) return;
    state.value = { title: 'Signing in…', text: 'One moment.' };
    ok(api.value.POST('/api/v1/auth/login-links/redeem', { body: { code } })).then(
      (session) => {
        signIn(session.token, session.expires_at);
        navigate('/console');
      },
      (err) =>
        (state.value = {
          title: 'Sign-in failed',
          text: /429|TOO_MANY/.test(describe(err))
            ? 'Too many failed attempts; try again later.'
            : 'This login link was already used, has expired, or is wrong. Ask for a new one.',
        }),
    );
  }, []);

  const usePasted = async (e: Event) => {
    e.preventDefault();
    const value = pasted.value.trim();
    if (!value) return;
    signIn(value);
    try {
      await ok(api.value.GET('/api/v1/auth/me'));
      navigate('/console');
    } catch (err) {
      forget();
      state.value = { title: 'Sign-in failed', text: describe(err) };
    }
  };

  return (
    <main class="narrow">
      <h1>{state.value.title}</h1>
      <p role="status">{state.value.text}</p>
      {flow.value && (
        <p>
          <button type="button" onClick={() => flow.value && startAuthorization(flow.value)}>
            Sign in with single sign-on
          </button>
        </p>
      )}
      <form onSubmit={usePasted}>
        <label for="token">API key or token</label>
        <input id="token" type="password" autocomplete="off" value={pasted.value} onInput={(e) => (pasted.value = (e.target as HTMLInputElement).value)} />
        <button type="submit">Sign in with the key</button>
      </form>
    </main>
  );
}
