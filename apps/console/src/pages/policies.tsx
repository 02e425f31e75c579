import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import type { SectionProps } from '../sections.js';
import { api } from '../session.js';
import { Grid } from '../ui/grid.js';
import { useLoad } from '../ui/load.js';
import { ConsoleError, Problem } from '../ui/problem.js';
import './policies.css';
import { type Clause, type Json, OPS, type Op, fromCondition, toCondition } from './policies/condition.js';
import { type Row, type Tables, ident, loadTables, runSql } from './tables/statements.js';

type Group = View<'PolicyGroup'>;
type Policy = View<'Policy'>;
type Member = View<'Member'>;
type Operation = Policy['operation'];
type Mode = Policy['mode'];
const OPERATIONS: Operation[] = ['select', 'insert', 'update', 'delete'];

/** What the page works with, loaded once and again after each change. */
interface Data {
  groups: Group[];
  policies: Policy[];
  members: Member[];
  tables: Tables;
  stfs: { id: string; name: string }[];
}

/**
 * Policies: policy groups with their users and STFs; the workspace's policies with a condition builder and its raw
 * JSON kept in sync; the rows a chosen member would see with the draft, before saving (view-as with a draft policy);
 * and a permission matrix of groups × tables × operations with its warnings.
 */
export default function Page({ workspace }: SectionProps) {
  const ws = workspace.id;
  const header = { 'X-Workspace-ID': ws };
  const data = useLoad<Data>(async () => {
    const [groups, policies, members, tables, stfs] = await Promise.all([
      ok(api.value.GET('/api/v1/policy-groups', { params: { header, query: { limit: 1000 } } })),
      ok(api.value.GET('/api/v1/policies', { params: { header, query: { limit: 1000 } } })),
      ok(api.value.GET('/api/v1/workspaces/{id}/members', { params: { path: { id: ws }, query: { limit: 1000 } } })),
      loadTables(ws),
      ok(api.value.GET('/api/v1/stfs', { params: { header, query: { limit: 1000 } } })).then(
        (list) => list.map((s) => ({ id: s.id, name: s.name })),
        () => [],
      ),
    ]);
    return { groups, policies, members, tables, stfs };
  }, [ws]);
  const editing = useSignal<Draft | null>(null);
  const d = data.data.value;
  return (
    <>
      <h1>Policies</h1>
      <p class="intro">
        Every table is default deny, for admins too: a member reads or changes rows only through an allow policy of a group they are in. A deny policy wins
        over allows.
      </p>
      <Problem error={data.error.value} />
      {!d ? (
        <p role="status">Loading…</p>
      ) : (
        <>
          <Groups ws={ws} data={d} reload={data.reload} />
          <section aria-labelledby="policies-heading">
            <h2 id="policies-heading">Policy list</h2>
            <PolicyList
              ws={ws}
              data={d}
              reload={data.reload}
              onEdit={(p) =>
                (editing.value = {
                  id: p.id,
                  name: p.name,
                  groupId: p.policy_group_id,
                  mode: p.mode,
                  table: p.table_name,
                  operation: p.operation,
                  json: p.condition === null ? '' : JSON.stringify(p.condition, null, 2),
                })
              }
            />
            {editing.value === null ? (
              <button
                type="button"
                onClick={() =>
                  (editing.value = {
                    id: null,
                    name: '',
                    groupId: d.groups[0]?.id ?? '',
                    mode: 'allow',
                    table: [...d.tables.keys()][0] ?? '',
                    operation: 'select',
                    json: '',
                  })
                }
              >
                New policy
              </button>
            ) : (
              <Editor
                key={editing.value.id ?? 'new'}
                ws={ws}
                data={d}
                initial={editing.value}
                onDone={async () => {
                  editing.value = null;
                  await data.reload();
                }}
              />
            )}
          </section>
          <Matrix data={d} />
        </>
      )}
    </>
  );
}

/** The policy groups: their users and STFs, a member added or removed, a new group. */
function Groups({ ws, data, reload }: { ws: string; data: Data; reload: () => Promise<void> }) {
  const error = useSignal<unknown>(null);
  const name = useSignal('');
  const header = { 'X-Workspace-ID': ws };
  const userName = (id: string) => {
    const m = data.members.find((x) => x.user_id === id);
    return m ? `${m.user_name} <${m.user_email}>` : id;
  };
  const act = async (f: () => Promise<unknown>) => {
    error.value = null;
    try {
      await f();
      await reload();
    } catch (err) {
      error.value = err;
    }
  };
  const patch = (g: Group, body: { user_ids?: string[]; stf_ids?: string[] }) =>
    act(() => ok(api.value.PATCH('/api/v1/policy-groups/{groupId}', { params: { header, path: { groupId: g.id } }, body })));
  return (
    <section aria-labelledby="groups-heading">
      <h2 id="groups-heading">Policy groups</h2>
      <Problem error={error.value} />
      {data.groups.length === 0 ? (
        <p>No policy groups yet.</p>
      ) : (
        <div class="scroll">
          <table class="groups">
            <caption>Policy groups and who is in them</caption>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">Users</th>
                <th scope="col">STFs</th>
                <th scope="col">Add</th>
              </tr>
            </thead>
            <tbody>
              {data.groups.map((g) => {
                const others = data.members.filter((m) => !g.user_ids.includes(m.user_id));
                const otherStfs = data.stfs.filter((s) => !g.stf_ids.includes(s.id));
                return (
                  <tr key={g.id}>
                    <th scope="row" class="wrap-cell">
                      {g.name}
                      <div>
                        <button type="button" class="small" aria-label={`Delete group ${g.name}`} onClick={() => act(() => ok(api.value.DELETE('/api/v1/policy-groups/{groupId}', { params: { header, path: { groupId: g.id } } })))}>
                          Delete
                        </button>
                      </div>
                    </th>
                    <td class="wrap-cell">
                      {g.user_ids.length === 0 && <span class="muted">nobody</span>}
                      <ul class="plain">
                        {g.user_ids.map((u) => (
                          <li key={u}>
                            {userName(u)}{' '}
                            <button type="button" class="small" aria-label={`Remove ${userName(u)} from ${g.name}`} onClick={() => patch(g, { user_ids: g.user_ids.filter((x) => x !== u) })}>
                              Remove
                            </button>
                          </li>
                        ))}
                      </ul>
                    </td>
                    <td class="wrap-cell">
                      {g.stf_ids.length === 0 && <span class="muted">none</span>}
                      <ul class="plain">
                        {g.stf_ids.map((s) => {
                          const label = data.stfs.find((x) => x.id === s)?.name ?? s;
                          return (
                            <li key={s}>
                              {label}{' '}
                              <button type="button" class="small" aria-label={`Remove STF ${label} from ${g.name}`} onClick={() => patch(g, { stf_ids: g.stf_ids.filter((x) => x !== s) })}>
                                Remove
                              </button>
                            </li>
                          );
                        })}
                      </ul>
                    </td>
                    <td>
                      <AddTo
                        label={`Add a member to ${g.name}`}
                        options={others.map((m) => ({ id: m.user_id, text: `${m.user_name} <${m.user_email}>` }))}
                        onAdd={(id) => patch(g, { user_ids: [...g.user_ids, id] })}
                      />
                      {otherStfs.length > 0 && (
                        <AddTo label={`Add an STF to ${g.name}`} options={otherStfs.map((s) => ({ id: s.id, text: s.name }))} onAdd={(id) => patch(g, { stf_ids: [...g.stf_ids, id] })} />
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const n = name.value.trim();
          if (!n) return;
          act(async () => {
            await ok(api.value.POST('/api/v1/policy-groups', { params: { header }, body: { name: n, user_ids: [], stf_ids: [] } }));
            name.value = '';
          });
        }}
      >
        <label for="new-group">New policy group</label>
        <input id="new-group" value={name.value} maxLength={255} onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
        <button type="submit">Create group</button>
      </form>
    </section>
  );
}

/** A select of who may be added and its button. */
function AddTo({ label, options, onAdd }: { label: string; options: { id: string; text: string }[]; onAdd: (id: string) => void }) {
  const chosen = useSignal('');
  if (options.length === 0) return null;
  const value = options.some((o) => o.id === chosen.value) ? chosen.value : (options[0]?.id ?? '');
  return (
    <div class="add-to">
      <select aria-label={label} value={value} onChange={(e) => (chosen.value = (e.target as HTMLSelectElement).value)}>
        {options.map((o) => (
          <option key={o.id} value={o.id}>
            {o.text}
          </option>
        ))}
      </select>
      <button type="button" aria-label={label} onClick={() => value && onAdd(value)}>
        Add
      </button>
    </div>
  );
}

/** The workspace's policies, each with edit and delete. */
function PolicyList({ ws, data, reload, onEdit }: { ws: string; data: Data; reload: () => Promise<void>; onEdit: (p: Policy) => void }) {
  const error = useSignal<unknown>(null);
  const header = { 'X-Workspace-ID': ws };
  const groupName = (id: string) => data.groups.find((g) => g.id === id)?.name ?? id;
  if (data.policies.length === 0) return <p>No policies yet: every table is closed to everyone.</p>;
  return (
    <>
      <Problem error={error.value} />
      <div class="scroll">
        <table class="policies">
          <caption>Policies of the workspace</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Group</th>
              <th scope="col">Mode</th>
              <th scope="col">Table</th>
              <th scope="col">Operation</th>
              <th scope="col">Condition</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {[...data.policies]
              .sort((a, b) => a.table_name.localeCompare(b.table_name) || a.operation.localeCompare(b.operation) || a.name.localeCompare(b.name))
              .map((p) => (
                <tr key={p.id}>
                  <td class="wrap-cell">{p.name}</td>
                  <td class="wrap-cell">{groupName(p.policy_group_id)}</td>
                  <td>{p.mode}</td>
                  <td>{p.table_name}</td>
                  <td>{p.operation}</td>
                  <td class="wrap-cell">
                    <code>{p.condition === null ? 'every row' : JSON.stringify(p.condition)}</code>
                  </td>
                  <td>
                    <button type="button" class="small" aria-label={`Edit policy ${p.name}`} onClick={() => onEdit(p)}>
                      Edit
                    </button>{' '}
                    <button
                      type="button"
                      class="small"
                      aria-label={`Delete policy ${p.name}`}
                      onClick={async () => {
                        error.value = null;
                        try {
                          await ok(api.value.DELETE('/api/v1/policies/{policyId}', { params: { header, path: { policyId: p.id } } }));
                          await reload();
                        } catch (err) {
                          error.value = err;
                        }
                      }}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

interface Draft {
  id: string | null;
  name: string;
  groupId: string;
  mode: Mode;
  table: string;
  operation: Operation;
  /** The condition as JSON text ('' for none): what is saved; the builder edits it too. */
  json: string;
}

/** The condition as the JSON text holds it: undefined when the text is not JSON. */
function parsed(json: string): { ok: true; value: unknown } | { ok: false; why: string } {
  if (json.trim() === '') return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(json) };
  } catch (err) {
    return { ok: false, why: `The condition is not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * A policy being written: its fields, the condition builder and the same condition as raw JSON (each edit of one
 * rewrites the other), and beside them the rows a chosen member would read with this draft, before saving.
 */
function Editor({ ws, data, initial, onDone }: { ws: string; data: Data; initial: Draft; onDone: () => Promise<void> }) {
  const draft = useSignal<Draft>(initial);
  const start = fromCondition(parsed(initial.json).ok ? (parsed(initial.json) as { value: unknown }).value : null);
  const clauses = useSignal<Clause[]>(typeof start === 'string' ? [] : start);
  const jsonProblem = useSignal<string | null>(typeof start === 'string' ? start : null);
  const error = useSignal<unknown>(null);
  const header = { 'X-Workspace-ID': ws };
  const d = draft.value;
  const columns = data.tables.get(d.table) ?? [];
  const typeOf = (c: string) => columns.find((x) => x.name === c)?.type;
  const set = (patch: Partial<Draft>) => (draft.value = { ...draft.value, ...patch });

  const setClauses = (next: Clause[]) => {
    clauses.value = next;
    const condition = toCondition(next, typeOf);
    set({ json: condition === null ? '' : JSON.stringify(condition, null, 2) });
    jsonProblem.value = null;
  };
  const setJson = (json: string) => {
    set({ json });
    const p = parsed(json);
    if (!p.ok) {
      jsonProblem.value = p.why;
      return;
    }
    const c = fromCondition(p.value);
    if (typeof c === 'string') jsonProblem.value = c;
    else {
      clauses.value = c;
      jsonProblem.value = null;
    }
  };
  const body = () => {
    const p = parsed(draft.value.json);
    if (!p.ok) throw new ConsoleError(p.why);
    return { name: d.name.trim() || 'draft', policy_group_id: d.groupId, mode: d.mode, table_name: d.table, operation: d.operation, condition: p.value as Json };
  };

  return (
    <div class="editor-layout">
      <form
        class="editor"
        aria-label={d.id ? `Edit policy ${initial.name}` : 'New policy'}
        onSubmit={async (e) => {
          e.preventDefault();
          error.value = null;
          try {
            const b = { ...body(), name: d.name.trim() };
            if (!b.name) throw new ConsoleError('Give the policy a name.');
            if (d.id) await ok(api.value.PATCH('/api/v1/policies/{policyId}', { params: { header, path: { policyId: d.id } }, body: b as never }));
            else await ok(api.value.POST('/api/v1/policies', { params: { header }, body: b as never }));
            await onDone();
          } catch (err) {
            error.value = err;
          }
        }}
      >
        <h3>{d.id ? `Edit policy ${initial.name}` : 'New policy'}</h3>
        <div class="fields">
          <div class="field">
            <label for="policy-name">Policy name</label>
            <input id="policy-name" value={d.name} maxLength={255} onInput={(e) => set({ name: (e.target as HTMLInputElement).value })} />
          </div>
          <div class="field">
            <label for="policy-group">Group</label>
            <select id="policy-group" value={d.groupId} onChange={(e) => set({ groupId: (e.target as HTMLSelectElement).value })}>
              {data.groups.map((g) => (
                <option key={g.id} value={g.id}>
                  {g.name}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="policy-mode">Mode</label>
            <select id="policy-mode" value={d.mode} onChange={(e) => set({ mode: (e.target as HTMLSelectElement).value as Mode })}>
              <option value="allow">allow</option>
              <option value="deny">deny</option>
            </select>
          </div>
          <div class="field">
            <label for="policy-table">Table</label>
            <select id="policy-table" value={d.table} onChange={(e) => set({ table: (e.target as HTMLSelectElement).value })}>
              {!data.tables.has(d.table) && d.table && <option value={d.table}>{d.table}</option>}
              {[...data.tables.keys()].map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="policy-operation">Operation</label>
            <select id="policy-operation" value={d.operation} onChange={(e) => set({ operation: (e.target as HTMLSelectElement).value as Operation })}>
              {OPERATIONS.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          </div>
        </div>

        <fieldset class="builder">
          <legend>Condition (all must hold; none: every row)</legend>
          {clauses.value.length === 0 && <p class="muted">No condition: the policy covers every row.</p>}
          {clauses.value.map((c, i) => (
            <div class="clause" key={i}>
              {i > 0 && <span class="and">and</span>}
              <select aria-label={`Condition ${i + 1} column`} value={c.column} onChange={(e) => setClauses(clauses.value.map((x, j) => (j === i ? { ...x, column: (e.target as HTMLSelectElement).value } : x)))}>
                {!columns.some((x) => x.name === c.column) && <option value={c.column}>{c.column}</option>}
                {columns.map((x) => (
                  <option key={x.name} value={x.name}>
                    {x.name}
                  </option>
                ))}
              </select>
              <select aria-label={`Condition ${i + 1} operator`} value={c.op} onChange={(e) => setClauses(clauses.value.map((x, j) => (j === i ? { ...x, op: (e.target as HTMLSelectElement).value as Op } : x)))}>
                {OPS.map((o) => (
                  <option key={o.op} value={o.op}>
                    {o.label}
                  </option>
                ))}
              </select>
              {c.op !== 'null' && c.op !== 'notnull' && (
                <>
                  {c.op !== '$in' && (
                    <label class="inline">
                      <input type="checkbox" checked={c.user} onChange={(e) => setClauses(clauses.value.map((x, j) => (j === i ? { ...x, user: (e.target as HTMLInputElement).checked } : x)))} />
                      the calling user ($user_id)
                    </label>
                  )}
                  {!c.user && (
                    <input
                      aria-label={`Condition ${i + 1} value`}
                      value={c.value}
                      onInput={(e) => setClauses(clauses.value.map((x, j) => (j === i ? { ...x, value: (e.target as HTMLInputElement).value } : x)))}
                    />
                  )}
                </>
              )}
              <button type="button" class="small" aria-label={`Remove condition ${i + 1}`} onClick={() => setClauses(clauses.value.filter((_, j) => j !== i))}>
                Remove
              </button>
            </div>
          ))}
          <button type="button" onClick={() => setClauses([...clauses.value, { column: columns[0]?.name ?? '', op: '$eq', value: '', user: false }])}>
            Add condition
          </button>
          <p class="muted">The condition format has no “or”: for rows that pass one condition or another, write a second allow policy.</p>
        </fieldset>

        <label for="policy-json">Condition as JSON</label>
        <textarea id="policy-json" rows={6} spellcheck={false} value={d.json} onInput={(e) => setJson((e.target as HTMLTextAreaElement).value)} />
        {jsonProblem.value && (
          <p role="alert" class="error">
            {jsonProblem.value}
          </p>
        )}
        <div class="actions">
          <button type="submit">{d.id ? 'Save policy' : 'Create policy'}</button>
          <button type="button" onClick={() => onDone()}>
            Cancel
          </button>
        </div>
        <Problem error={error.value} />
      </form>
      <Preview ws={ws} data={data} table={d.table} body={() => ({ ...body(), policy_id: d.id })} />
    </div>
  );
}

/**
 * The rows a member would read with the draft, before it is saved: a read of the table as the caller and the member
 * at once, the member's side decided with the draft in place (POST …/sql with as_user_id and draft_policy).
 */
function Preview({ ws, data, table, body }: { ws: string; data: Data; table: string; body: () => Record<string, unknown> }) {
  const member = useSignal(data.members[0]?.user_id ?? '');
  const rows = useSignal<Row[] | null>(null);
  const error = useSignal<unknown>(null);
  const shownFor = useSignal('');
  const run = async () => {
    error.value = null;
    rows.value = null;
    try {
      const draft = body();
      const r = await runSql(ws, `SELECT * FROM ${ident(table)} LIMIT 100`, { as_user_id: member.value, draft_policy: draft });
      rows.value = r.rows ?? [];
      const m = data.members.find((x) => x.user_id === member.value);
      shownFor.value = m ? m.user_name : member.value;
    } catch (err) {
      error.value = err;
    }
  };
  const columns = (data.tables.get(table) ?? []).map((c) => c.name).filter((c) => c !== 'deleted_at');
  return (
    <section class="preview" aria-labelledby="preview-heading">
      <h3 id="preview-heading">Rows a member would see with this draft</h3>
      <p class="muted">Before saving: {table} as the member reads it with the draft in place, within the rows you may read yourself.</p>
      <label for="preview-member">Member</label>
      <select id="preview-member" value={member.value} onChange={(e) => (member.value = (e.target as HTMLSelectElement).value)}>
        {data.members.map((m) => (
          <option key={m.user_id} value={m.user_id}>
            {m.user_name} &lt;{m.user_email}&gt;
          </option>
        ))}
      </select>
      <button type="button" onClick={run} disabled={!table || !member.value}>
        Preview rows
      </button>
      <Problem error={error.value} />
      {rows.value && (
        <>
          <p role="status">
            {rows.value.length} row{rows.value.length === 1 ? '' : 's'} of {table} for {shownFor.value} with the draft.
          </p>
          {/* Its own scrolling region, focusable so a keyboard can scroll it (the grid's cells are text only). */}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard to scroll it (axe scrollable-region-focusable) */}
          <section class="preview-rows" aria-label="Previewed rows" tabIndex={0}>
            <Grid caption={`Rows of ${table} for ${shownFor.value} with the draft`} columns={columns} rows={rows.value} pageSize={20} />
          </section>
        </>
      )}
    </section>
  );
}

/** One group's standing on one table and operation, from its policies. */
function standing(policies: Policy[]): { text: string; kind: 'allow' | 'some' | 'deny' | 'none' } {
  const allows = policies.filter((p) => p.mode === 'allow');
  const denies = policies.filter((p) => p.mode === 'deny');
  if (denies.some((p) => p.condition === null)) return { text: 'denied', kind: 'deny' };
  if (allows.length === 0) return denies.length ? { text: 'deny (conditional), no allow', kind: 'none' } : { text: '—', kind: 'none' };
  const whole = allows.some((p) => p.condition === null || Object.keys(p.condition).length === 0) && denies.length === 0;
  return { text: whole ? 'all rows' : 'some rows', kind: whole ? 'allow' : 'some' };
}

/** Groups × tables × operations, and what is wrong with it: a table nobody can read, one with no policy at all. */
function Matrix({ data }: { data: Data }) {
  const tables = [...new Set([...data.tables.keys(), ...data.policies.map((p) => p.table_name)])].sort();
  const warnings: string[] = [];
  for (const t of tables) {
    const on = data.policies.filter((p) => p.table_name === t);
    if (on.length === 0) {
      warnings.push(`Table ${t} has no policy at all: nobody can read or change it.`);
      continue;
    }
    const readers = data.groups.filter((g) => {
      if (g.user_ids.length === 0 && g.stf_ids.length === 0) return false;
      const kind = standing(on.filter((p) => p.policy_group_id === g.id && p.operation === 'select')).kind;
      return kind === 'allow' || kind === 'some';
    });
    if (readers.length === 0) warnings.push(`Nobody can read table ${t}: no group with members has an allow select policy on it.`);
    if (!data.tables.has(t)) warnings.push(`Policies name table ${t}, which does not exist (yet).`);
  }
  for (const g of data.groups) {
    if (g.user_ids.length === 0 && g.stf_ids.length === 0 && data.policies.some((p) => p.policy_group_id === g.id)) {
      warnings.push(`Group ${g.name} has policies but no users or STFs: they apply to nobody.`);
    }
  }
  return (
    <section aria-labelledby="matrix-heading">
      <h2 id="matrix-heading">Permission matrix</h2>
      {warnings.length > 0 ? (
        <ul class="warnings" aria-label="Warnings">
          {warnings.map((w) => (
            <li key={w}>⚠ {w}</li>
          ))}
        </ul>
      ) : (
        <p>No warnings.</p>
      )}
      {tables.length > 0 && data.groups.length > 0 && (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard to scroll it (axe scrollable-region-focusable)
        <section class="scroll" aria-label="Permission matrix" tabIndex={0}>
          <table class="matrix">
            <caption>What each group may do on each table (its members also get what their other groups allow)</caption>
            <thead>
              <tr>
                <th scope="col">Table</th>
                <th scope="col">Group</th>
                {OPERATIONS.map((o) => (
                  <th key={o} scope="col">
                    {o}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {tables.flatMap((t) =>
                data.groups.map((g) => (
                  <tr key={`${t}/${g.id}`}>
                    <th scope="row">{t}</th>
                    <th scope="row" class="wrap-cell">
                      {g.name}
                    </th>
                    {OPERATIONS.map((o) => {
                      const s = standing(data.policies.filter((p) => p.table_name === t && p.policy_group_id === g.id && p.operation === o));
                      return (
                        <td key={o} class={`m-${s.kind}`}>
                          {s.text}
                        </td>
                      );
                    })}
                  </tr>
                )),
              )}
            </tbody>
          </table>
        </section>
      )}
    </section>
  );
}
