import { ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { SignIn } from './pages/sign-in.js';
import { Workspaces } from './pages/workspaces.js';
import { BASE, navigate, path } from './router.js';
import { api, signOut, token } from './session.js';

/** Who is signed in, in the header; a credential that stopped working sends the person to sign in again. */
function Header() {
  const me = useSignal<{ name: string; email: string } | null>(null);
  useEffect(() => {
    ok(api.value.GET('/api/v1/auth/me')).then(
      (u) => (me.value = u),
      () => signOut().then(() => navigate(`${BASE}/login`)),
    );
  }, [token.value]);
  return (
    <header>
      <nav aria-label="Console">
        <a
          href={BASE}
          onClick={(e) => {
            e.preventDefault();
            navigate(BASE);
          }}
        >
          Workspaces
        </a>
      </nav>
      <span class="who">{me.value ? `Signed in as ${me.value.name} <${me.value.email}>` : ''}</span>
      <button type="button" onClick={() => signOut().then(() => navigate(`${BASE}/login`))}>
        Sign out
      </button>
    </header>
  );
}

export function App() {
  if (path.value === `${BASE}/login` || !token.value) return <SignIn />;
  return (
    <>
      <Header />
      <Workspaces />
    </>
  );
}
