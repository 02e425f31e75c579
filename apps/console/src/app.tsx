import { ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import type { ComponentType } from 'preact';
import { useEffect } from 'preact/hooks';
import { resumeRefresh } from './oauth.js';
import { SignIn } from './pages/sign-in.js';
import { Workspaces } from './pages/workspaces.js';
import { BASE, navigate, place, sectionPath } from './router.js';
import { SECTIONS, type SectionProps, type Workspace } from './sections.js';
import { api, signOut, token } from './session.js';
import { Link } from './ui/link.js';
import { Problem } from './ui/problem.js';

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
        <Link to={BASE}>Workspaces</Link>
      </nav>
      <span class="who">{me.value ? `Signed in as ${me.value.name} <${me.value.email}>` : ''}</span>
      <button type="button" onClick={() => signOut().then(() => navigate(`${BASE}/login`))}>
        Sign out
      </button>
    </header>
  );
}

/** A section's page, loaded (its own chunk) the first time it is opened. */
const loaded = new Map<string, ComponentType<SectionProps>>();
function SectionPage({ id, ...props }: SectionProps & { id: string }) {
  const section = SECTIONS.find((s) => s.id === id);
  const Page = useSignal<ComponentType<SectionProps> | null>(loaded.get(id) ?? null);
  const failed = useSignal<unknown>(null);
  useEffect(() => {
    if (!section || loaded.has(id)) {
      Page.value = loaded.get(id) ?? null;
      return;
    }
    Page.value = null;
    section.load().then(
      (m) => {
        loaded.set(id, m.default);
        Page.value = m.default;
      },
      (err) => (failed.value = err),
    );
  }, [id]);
  if (!section) return <p>There is no such page here.</p>;
  if (failed.value) return <Problem error={failed.value} />;
  const P = Page.value;
  return P ? <P {...props} /> : <p role="status">Loading…</p>;
}

/** A workspace's pages: its sections beside, the workspace switcher above them. */
function WorkspaceFrame({ workspaceId, section, rest }: { workspaceId: string; section: string; rest: string[] }) {
  const all = useSignal<Workspace[] | null>(null);
  const error = useSignal<unknown>(null);
  useEffect(() => {
    ok(api.value.GET('/api/v1/workspaces', { params: { query: { limit: 1000 } } })).then(
      (list) => (all.value = list),
      (err) => (error.value = err),
    );
  }, [token.value]);
  const workspace = all.value?.find((w) => w.id === workspaceId);
  return (
    <div class="frame">
      <nav class="sections" aria-label="Workspace">
        <label for="switch-workspace">Workspace</label>
        <select id="switch-workspace" value={workspaceId} onChange={(e) => navigate(sectionPath((e.target as HTMLSelectElement).value, section))}>
          {(all.value ?? []).map((w) => (
            <option key={w.id} value={w.id}>
              {w.name}
            </option>
          ))}
        </select>
        <ul>
          {SECTIONS.map((s) => (
            <li key={s.id}>
              <Link to={sectionPath(workspaceId, s.id)} current={s.id === section}>
                {s.title}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main class="section">
        <Problem error={error.value} />
        {all.value && !workspace && <p>This workspace does not exist or you are not a member of it.</p>}
        {workspace && <SectionPage key={`${workspace.id}/${section}`} id={section} workspace={workspace} rest={rest} />}
      </main>
    </div>
  );
}

resumeRefresh();

export function App() {
  const at = place.value;
  if (at.kind === 'login' || at.kind === 'callback' || !token.value) return <SignIn />;
  return (
    <>
      <Header />
      {at.kind === 'section' ? <WorkspaceFrame workspaceId={at.workspaceId} section={at.section} rest={at.rest} /> : <Workspaces />}
    </>
  );
}
