import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { sectionPath } from '../router.js';
import { api, describe } from '../session.js';
import { Link } from '../ui/link.js';

type Workspace = View<'WorkspaceWithRole'>;

/** The caller's workspaces (with their role), and a new one. */
export function Workspaces() {
  const items = useSignal<Workspace[] | null>(null);
  const error = useSignal<string | null>(null);
  const name = useSignal('');

  const load = () =>
    ok(api.value.GET('/api/v1/workspaces', { params: { query: { limit: 1000 } } })).then(
      (list) => (items.value = list),
      (err) => (error.value = describe(err)),
    );
  useEffect(() => {
    load();
  }, []);

  const create = async (e: Event) => {
    e.preventDefault();
    error.value = null;
    try {
      await ok(api.value.POST('/api/v1/workspaces', { body: { name: name.value.trim() } }));
      name.value = '';
      await load();
    } catch (err) {
      error.value = describe(err);
    }
  };

  return (
    <main>
      <h1>Workspaces</h1>
      {error.value && (
        <p role="alert" class="error">
          {error.value}
        </p>
      )}
      {items.value === null ? (
        <p role="status">Loading…</p>
      ) : items.value.length === 0 ? (
        <p>No workspaces yet.</p>
      ) : (
        <table>
          <caption>Your workspaces</caption>
          <thead>
            <tr>
              <th scope="col" class="wrap">
                Name
              </th>
              <th scope="col">Your role</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {items.value.map((w) => (
              <tr key={w.id}>
                <td class="wrap">
                  <Link to={sectionPath(w.id, 'sql')}>{w.name}</Link>
                </td>
                <td>{w.role}</td>
                <td>{new Date(w.created_at).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form onSubmit={create}>
        <label for="new-workspace">New workspace</label>
        <input id="new-workspace" value={name.value} maxLength={255} required onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
        <button type="submit">Create workspace</button>
      </form>
    </main>
  );
}
