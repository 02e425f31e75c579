import { ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { sectionPath } from '../router.js';
import type { SectionProps } from '../sections.js';
import { api } from '../session.js';
import { Link } from '../ui/link.js';
import { useLoad } from '../ui/load.js';
import { Problem } from '../ui/problem.js';
import { ChartCard } from './dashboard/chart.js';
import './dashboard.css';

/**
 * Dashboard: the workspace's pinned charts (GET /api/v1/pinned-charts), each drawn from its own query run by the
 * viewer under their own policies, when the workspace's dashboard is on (GET …/setup/dashboard-enabled; admins turn
 * it on and off here). Charts are pinned from the SQL editor.
 */
export default function Page({ workspace }: SectionProps) {
  const ws = workspace.id;
  const admin = workspace.role === 'admin';
  const flag = useLoad(() => ok(api.value.GET('/api/v1/workspaces/{id}/setup/dashboard-enabled', { params: { path: { id: ws } } })), [ws]);
  const me = useLoad(() => ok(api.value.GET('/api/v1/auth/me')), []);
  const enabled = flag.data.value?.enabled === true;
  const charts = useLoad(
    () => (enabled ? ok(api.value.GET('/api/v1/pinned-charts', { params: { header: { 'X-Workspace-ID': ws }, query: { limit: 1000 } } })) : Promise.resolve(null)),
    [ws, enabled],
  );
  const switchError = useSignal<unknown>(null);
  const removed = useSignal('');

  const setEnabled = async (on: boolean) => {
    switchError.value = null;
    try {
      flag.data.value = await ok(api.value.PUT('/api/v1/workspaces/{id}/setup/dashboard-enabled', { params: { path: { id: ws } }, body: { enabled: on } }));
    } catch (err) {
      switchError.value = err;
    }
  };

  const list = charts.data.value ?? [];
  return (
    <div class="dashboard-page">
      <h1>Dashboard</h1>
      <Problem error={flag.error.value} />
      <Problem error={switchError.value} label="Error of the dashboard setting" />
      {flag.data.value === null && !flag.error.value && <p role="status">Loading…</p>}
      {flag.data.value && !enabled && (
        <div class="off">
          <p>The dashboard is turned off for this workspace.</p>
          {admin ? (
            <button type="button" onClick={() => setEnabled(true)}>
              Turn the dashboard on
            </button>
          ) : (
            <p>A workspace admin can turn it on.</p>
          )}
        </div>
      )}
      {enabled && (
        <>
          <div class="dashboard-tools">
            <p class="hint">
              Each chart runs its query as you, under your own policies: another member may see other numbers. Pin a chart from the{' '}
              <Link to={sectionPath(ws, 'sql')}>SQL editor</Link>.
            </p>
            <button type="button" onClick={() => charts.reload()}>
              Reload the charts
            </button>
            {admin && (
              <button type="button" onClick={() => setEnabled(false)}>
                Turn the dashboard off
              </button>
            )}
            <span role="status">{charts.loading.value ? 'Loading the charts…' : removed.value}</span>
          </div>
          <Problem error={charts.error.value} />
          {charts.data.value && list.length === 0 && <p>No charts are pinned yet.</p>}
          <div class="charts">
            {list.map((c) => (
              <ChartCard
                key={c.id}
                chart={c}
                workspaceId={ws}
                mayChange={admin || (me.data.value !== null && c.created_by === me.data.value.id)}
                onUnpinned={() => {
                  removed.value = `Unpinned "${c.title}".`;
                  charts.reload();
                }}
              />
            ))}
          </div>
        </>
      )}
    </div>
  );
}
