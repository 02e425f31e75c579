import { type View, ok, type operations } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { api } from '../../session.js';
import { useLoad } from '../../ui/load.js';
import { Problem } from '../../ui/problem.js';

type Workspace = View<'WorkspaceWithRole'>;
type Patch = operations['update_workspace']['requestBody']['content']['application/json'];

/** Every field an admin changes with PATCH /api/v1/workspaces/{id}, as the form holds it (text for the inputs). */
interface Draft {
  name: string;
  custom_prompt: string;
  mcp_timeout_ms: string;
  auto_embed_files: boolean;
  auto_embed_tables: boolean;
  ddl_policy_group_id: string;
  workflow_editor_policy_group_id: string;
  policy_editor_policy_group_id: string;
  sql_approval_mode: Workspace['sql_approval_mode'];
  sql_approval_applies_to: Workspace['sql_approval_applies_to'];
  sql_approver_policy_group_id: string;
  sql_self_approval: boolean;
  /** The dashboard flag (PUT …/setup/dashboard-enabled). */
  dashboard_enabled: boolean;
}

const GROUP_FIELDS = ['ddl_policy_group_id', 'workflow_editor_policy_group_id', 'policy_editor_policy_group_id', 'sql_approver_policy_group_id'] as const;
const FLAGS = ['auto_embed_files', 'auto_embed_tables', 'sql_self_approval'] as const;

const draftOf = (w: Workspace, dashboard: boolean): Draft => ({
  name: w.name,
  custom_prompt: w.custom_prompt,
  mcp_timeout_ms: String(w.mcp_timeout_ms),
  auto_embed_files: w.auto_embed_files,
  auto_embed_tables: w.auto_embed_tables,
  ddl_policy_group_id: w.ddl_policy_group_id ?? '',
  workflow_editor_policy_group_id: w.workflow_editor_policy_group_id ?? '',
  policy_editor_policy_group_id: w.policy_editor_policy_group_id ?? '',
  sql_approval_mode: w.sql_approval_mode,
  sql_approval_applies_to: w.sql_approval_applies_to,
  sql_approver_policy_group_id: w.sql_approver_policy_group_id ?? '',
  sql_self_approval: w.sql_self_approval,
  dashboard_enabled: dashboard,
});

/** The changed fields only, as the API takes them (a number typed in is sent as typed: the API says what is wrong). */
function patchOf(before: Draft, after: Draft): Patch {
  const patch: Record<string, unknown> = {};
  if (after.name !== before.name) patch.name = after.name;
  if (after.custom_prompt !== before.custom_prompt) patch.custom_prompt = after.custom_prompt;
  if (after.mcp_timeout_ms !== before.mcp_timeout_ms) patch.mcp_timeout_ms = after.mcp_timeout_ms.trim() === '' ? null : Number(after.mcp_timeout_ms);
  for (const f of FLAGS) if (after[f] !== before[f]) patch[f] = after[f];
  for (const f of GROUP_FIELDS) if (after[f] !== before[f]) patch[f] = after[f] || null;
  if (after.sql_approval_mode !== before.sql_approval_mode) patch.sql_approval_mode = after.sql_approval_mode;
  if (after.sql_approval_applies_to !== before.sql_approval_applies_to) patch.sql_approval_applies_to = after.sql_approval_applies_to;
  return patch as Patch;
}

/**
 * The workspace's settings: every field of its PATCH (name, the agents' prompt, the MCP time limit, auto-embedding,
 * the DDL, workflow-editor and policy-editor groups, the SQL approval settings) and the dashboard flag. The form
 * checks nothing itself: what the API refuses is shown with its code and details.
 */
export function WorkspaceSettings({ workspaceId, onSaved }: { workspaceId: string; onSaved?: () => void }) {
  const path = { id: workspaceId };
  const loaded = useLoad(async () => {
    const [w, dashboard] = await Promise.all([
      ok(api.value.GET('/api/v1/workspaces/{id}', { params: { path } })),
      ok(api.value.GET('/api/v1/workspaces/{id}/setup/dashboard-enabled', { params: { path } })),
    ]);
    return draftOf(w, dashboard.enabled);
  }, [workspaceId]);
  const groups = useLoad(() => ok(api.value.GET('/api/v1/policy-groups', { params: { header: { 'X-Workspace-ID': workspaceId }, query: { limit: 1000 } } })), [workspaceId]);
  const draft = useSignal<Draft | null>(null);
  const status = useSignal('');
  const error = useSignal<unknown>(null);
  useEffect(() => {
    if (loaded.data.value) draft.value = loaded.data.value;
  }, [loaded.data.value]);

  const d = draft.value;
  const before = loaded.data.value;
  if (!d || !before) return <Problem error={loaded.error.value} />;
  const set =
    <K extends keyof Draft>(k: K) =>
    (e: Event) => {
      const t = e.target as HTMLInputElement;
      draft.value = { ...d, [k]: t.type === 'checkbox' ? t.checked : t.value };
    };

  const save = async (e: Event) => {
    e.preventDefault();
    error.value = null;
    status.value = '';
    const patch = patchOf(before, d);
    const dashboardChanged = d.dashboard_enabled !== before.dashboard_enabled;
    if (Object.keys(patch as object).length === 0 && !dashboardChanged) {
      status.value = 'Nothing changed.';
      return;
    }
    try {
      if (Object.keys(patch as object).length > 0) await ok(api.value.PATCH('/api/v1/workspaces/{id}', { params: { path }, body: patch }));
      if (dashboardChanged) await ok(api.value.PUT('/api/v1/workspaces/{id}/setup/dashboard-enabled', { params: { path }, body: { enabled: d.dashboard_enabled } }));
      await loaded.reload();
      status.value = 'The settings were saved.';
      onSaved?.();
    } catch (err) {
      error.value = err;
    }
  };

  const groupSelect = (k: (typeof GROUP_FIELDS)[number], label: string, none: string) => (
    <span class="field">
      <label for={`ws-${k}`}>{label}</label>
      <select id={`ws-${k}`} value={d[k]} onChange={set(k)}>
        <option value="">{none}</option>
        {(groups.data.value ?? []).map((g) => (
          <option key={g.id} value={g.id}>
            {g.name}
          </option>
        ))}
        {d[k] && !(groups.data.value ?? []).some((g) => g.id === d[k]) && <option value={d[k]}>{d[k]}</option>}
      </select>
    </span>
  );
  const check = (k: (typeof FLAGS)[number] | 'dashboard_enabled', label: string) => (
    <span class="check">
      <input id={`ws-${k}`} type="checkbox" checked={d[k]} onChange={set(k)} />
      <label for={`ws-${k}`}>{label}</label>
    </span>
  );

  return (
    <section aria-labelledby="settings-heading">
      <h2 id="settings-heading">Workspace settings</h2>
      <form class="settings" noValidate onSubmit={save}>
        <fieldset>
          <legend>General</legend>
          <span class="field">
            <label for="ws-name">Name</label>
            <input id="ws-name" value={d.name} onInput={set('name')} />
          </span>
          <span class="field">
            <label for="ws-custom_prompt">Instructions for agents (custom prompt)</label>
            <textarea id="ws-custom_prompt" rows={4} value={d.custom_prompt} onInput={set('custom_prompt')} />
          </span>
          <span class="field">
            <label for="ws-mcp_timeout_ms">MCP tool-call time limit (milliseconds)</label>
            <input id="ws-mcp_timeout_ms" inputMode="numeric" aria-describedby="ws-mcp-hint" value={d.mcp_timeout_ms} onInput={set('mcp_timeout_ms')} />
            <small id="ws-mcp-hint">30000 to 3600000; 300000 is five minutes.</small>
          </span>
          {check('dashboard_enabled', 'Dashboard enabled (pinned charts are shown to members)')}
        </fieldset>
        <fieldset>
          <legend>Embeddings</legend>
          {check('auto_embed_files', 'Embed uploaded files automatically')}
          {check('auto_embed_tables', 'Embed rows written through SQL automatically')}
        </fieldset>
        <fieldset>
          <legend>Who may do what (besides admins)</legend>
          {groupSelect('ddl_policy_group_id', 'Group that may change the schema (DDL)', 'Admins only')}
          {groupSelect('workflow_editor_policy_group_id', 'Group that edits workflows, STFs, effects, files and documents', 'Admins only')}
          {groupSelect('policy_editor_policy_group_id', 'Group that edits policies', 'Admins only')}
        </fieldset>
        <fieldset>
          <legend>SQL approval</legend>
          <span class="field">
            <label for="ws-sql_approval_mode">Statements that wait for approval</label>
            <select id="ws-sql_approval_mode" value={d.sql_approval_mode} onChange={set('sql_approval_mode')}>
              <option value="none">None: every statement runs at once</option>
              <option value="write_only">Writes (statements that change rows)</option>
              <option value="ddl_only">Schema changes (DDL)</option>
              <option value="all">Writes and schema changes</option>
            </select>
          </span>
          <span class="field">
            <label for="ws-sql_approval_applies_to">Whose statements wait</label>
            <select id="ws-sql_approval_applies_to" value={d.sql_approval_applies_to} onChange={set('sql_approval_applies_to')}>
              <option value="agents">Agents' (API keys and MCP)</option>
              <option value="everyone">Everyone's</option>
            </select>
          </span>
          {groupSelect('sql_approver_policy_group_id', 'Group that approves (besides admins)', 'Admins only')}
          {check('sql_self_approval', 'An approver may approve their own proposal')}
        </fieldset>
        <div class="actions">
          <button type="submit">Save settings</button>
          <button type="button" onClick={() => (draft.value = before)}>
            Undo changes
          </button>
        </div>
        <p role="status">{status.value}</p>
        <Problem error={error.value} label="Settings" />
        <Problem error={groups.error.value} label="Policy groups" />
      </form>
    </section>
  );
}
