import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { navigate, query, sectionPath } from '../router.js';
import type { SectionProps } from '../sections.js';
import { api } from '../session.js';
import { Link } from '../ui/link.js';
import { useLoad } from '../ui/load.js';
import { Problem } from '../ui/problem.js';
import { when } from '../ui/values.js';
import './audit.css';

type Entry = View<'AuditLogEntry'>;
type Member = View<'Member'>;

const PAGE = 50;
const FILTERS = ['action', 'user_id', 'resource_type', 'resource_id', 'since', 'until'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

/** Resource types the log writes (packages/audit/src/operations.ts), offered as suggestions. */
const RESOURCE_TYPES = [
  'table',
  'workflow',
  'workflow_run',
  'file',
  'document',
  'policy',
  'policy_group',
  'stf',
  'effect',
  'member',
  'invitation',
  'workspace',
  'sql_proposal',
  'pinned_chart',
  'embedding',
];

/** The console page of a resource, where there is one; otherwise null (the id is shown as text). */
function resourcePath(ws: string, type: string, id: string): string | null {
  switch (type) {
    case 'table':
      return sectionPath(ws, 'tables', id);
    case 'workflow':
      return sectionPath(ws, 'workflows', id);
    case 'file':
      return sectionPath(ws, 'files', id);
    case 'document':
      return sectionPath(ws, 'documents', id);
    case 'policy':
      return sectionPath(ws, 'policies', id);
    case 'stf':
      return sectionPath(ws, 'stfs', id);
    default:
      return null;
  }
}

/** An ISO time as the value of a datetime-local input (the reader's local time), and back. */
const toLocalInput = (iso: string) => {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const local = new Date(d.getTime() - d.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
};
const fromLocalInput = (v: string) => (v ? new Date(v).toISOString() : '');

const readFilters = (q: string): Filters & { offset: number } => {
  const p = new URLSearchParams(q);
  const f = Object.fromEntries(FILTERS.map((k) => [k, p.get(k) ?? ''])) as Filters;
  return { ...f, offset: Math.max(0, Number(p.get('offset')) || 0) };
};

/**
 * The workspace's audit log, newest first, with the API's filters (operation — a trailing * matches a prefix —,
 * user, resource type and id, a time range) kept in the address, paging, and each entry linked to its resource's
 * page where the console has one. Details are shown as JSON text.
 */
export default function AuditPage({ workspace }: SectionProps) {
  const ws = workspace.id;
  const current = readFilters(query.value);
  const key = query.value;
  const entries = useLoad<Entry[]>(() => {
    const q: Record<string, string | number> = { limit: PAGE + 1, offset: current.offset };
    for (const k of FILTERS) if (current[k]) q[k] = current[k];
    return ok(api.value.GET('/api/v1/audit-logs', { params: { header: { 'X-Workspace-ID': ws }, query: q } }));
  }, [ws, key]);
  const members = useLoad<Member[]>(() => ok(api.value.GET('/api/v1/workspaces/{id}/members', { params: { path: { id: ws }, query: { limit: 1000 } } })), [ws]);
  const people = new Map((members.data.value ?? []).map((m) => [m.user_id, m]));

  const asDraft = (f: Filters): Filters => ({ ...f, since: f.since && toLocalInput(f.since), until: f.until && toLocalInput(f.until) });
  const draft = useSignal<Filters>(asDraft(current));
  // Back and forward change the address: the form follows it.
  useEffect(() => {
    draft.value = asDraft(readFilters(key));
  }, [key]);
  const set = (k: keyof Filters) => (e: Event) => (draft.value = { ...draft.value, [k]: (e.target as HTMLInputElement).value });
  const go = (f: Filters, offset: number) => {
    const p = new URLSearchParams();
    for (const k of FILTERS) if (f[k]) p.set(k, f[k]);
    if (offset > 0) p.set('offset', String(offset));
    const qs = p.toString();
    navigate(`${sectionPath(ws, 'audit')}${qs ? `?${qs}` : ''}`);
  };
  const apply = (e: Event) => {
    e.preventDefault();
    const d = draft.value;
    go({ ...d, action: d.action.trim(), resource_type: d.resource_type.trim(), resource_id: d.resource_id.trim(), since: fromLocalInput(d.since), until: fromLocalInput(d.until) }, 0);
  };
  const clear = () => {
    draft.value = { action: '', user_id: '', resource_type: '', resource_id: '', since: '', until: '' };
    go(draft.value, 0);
  };

  const list = entries.data.value ?? [];
  const shown = list.slice(0, PAGE);
  const who = (e: Entry) => {
    if (!e.user_id) return 'the service';
    const m = people.get(e.user_id);
    return m ? `${m.user_name} <${m.user_email}>` : e.user_id;
  };

  return (
    <div class="audit-page">
      <h1>Audit log</h1>
      <form class="filters" aria-label="Filter the audit log" onSubmit={apply}>
        <span class="field">
          <label for="audit-action">Operation</label>
          <input id="audit-action" aria-describedby="audit-action-hint" value={draft.value.action} onInput={set('action')} />
          <small id="audit-action-hint">e.g. upload_file; update_* matches every update</small>
        </span>
        <span class="field">
          <label for="audit-user">User</label>
          <select id="audit-user" value={draft.value.user_id} onChange={set('user_id')}>
            <option value="">Anyone</option>
            {(members.data.value ?? []).map((m) => (
              <option key={m.user_id} value={m.user_id}>
                {m.user_name} &lt;{m.user_email}&gt;
              </option>
            ))}
          </select>
        </span>
        <span class="field">
          <label for="audit-type">Resource type</label>
          <input id="audit-type" list="audit-types" value={draft.value.resource_type} onInput={set('resource_type')} />
          <datalist id="audit-types">
            {RESOURCE_TYPES.map((t) => (
              <option key={t} value={t} />
            ))}
          </datalist>
        </span>
        <span class="field">
          <label for="audit-resource">Resource id</label>
          <input id="audit-resource" value={draft.value.resource_id} onInput={set('resource_id')} />
        </span>
        <span class="field">
          <label for="audit-since">From</label>
          <input id="audit-since" type="datetime-local" value={draft.value.since} onInput={set('since')} />
        </span>
        <span class="field">
          <label for="audit-until">Until</label>
          <input id="audit-until" type="datetime-local" value={draft.value.until} onInput={set('until')} />
        </span>
        <button type="submit">Apply filters</button>
        <button type="button" onClick={clear}>
          Clear filters
        </button>
      </form>
      <Problem error={entries.error.value} />
      <Problem error={members.error.value} label="Members" />
      {entries.data.value === null && !entries.error.value ? (
        <p role="status">Loading…</p>
      ) : shown.length === 0 ? (
        <p role="status">No entries{FILTERS.some((k) => current[k]) ? ' match these filters' : ''}.</p>
      ) : (
        <>
          <p role="status">
            Entries {current.offset + 1}–{current.offset + shown.length}
            {list.length > PAGE ? ' (more on the next page)' : ''}.
          </p>
          <div class="scroll">
            <table>
              <caption>Audit entries, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Operation</th>
                  <th scope="col">By</th>
                  <th scope="col">Resource</th>
                  <th scope="col" class="wrap">
                    Details
                  </th>
                </tr>
              </thead>
              <tbody>
                {shown.map((e) => (
                  <tr key={e.id}>
                    <td>{when(e.created_at)}</td>
                    <td class="value">{e.action}</td>
                    <td class="value" dir="auto">
                      {who(e)}
                      {e.api_key_id && <div class="sub">with API key {e.api_key_id}</div>}
                      {e.transport && <div class="sub">over {e.transport === 'mcp' ? 'MCP' : 'HTTP'}</div>}
                    </td>
                    <td class="value">
                      <Resource ws={ws} entry={e} />
                    </td>
                    <td class="wrap">
                      <pre class="details" dir="auto">
                        {JSON.stringify(e.details, null, 1)}
                      </pre>
                      {e.request_id && <div class="sub">request {e.request_id}</div>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <nav class="pager" aria-label="Pages of the audit log">
        <button type="button" disabled={current.offset === 0} onClick={() => go(current, Math.max(0, current.offset - PAGE))}>
          Newer entries
        </button>
        <button type="button" disabled={list.length <= PAGE} onClick={() => go(current, current.offset + PAGE)}>
          Older entries
        </button>
      </nav>
    </div>
  );
}

/** An entry's resource: its type, and its id linked to the console's page of it when there is one. */
function Resource({ ws, entry }: { ws: string; entry: Entry }) {
  const { resource_type: type, resource_id: id } = entry;
  if (!id) return <>{type}</>;
  // A SQL statement's entry names every table it touched, comma-separated.
  const ids = type === 'table' ? id.split(',').filter(Boolean) : [id];
  return (
    <>
      {type}{' '}
      {ids.map((one, i) => {
        const to = resourcePath(ws, type, one);
        return (
          <span key={one} dir="auto">
            {i > 0 && ', '}
            {to ? <Link to={to}>{one}</Link> : one}
          </span>
        );
      })}
    </>
  );
}
