import { type Signal, useSignal } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import { navigate, sectionPath } from '../router.js';
import type { SectionProps } from '../sections.js';
import { Link } from '../ui/link.js';
import { type LiveMessage, useLive } from '../ui/live.js';
import { useLoad } from '../ui/load.js';
import { ConsoleError, Problem } from '../ui/problem.js';
import { cellText } from '../ui/values.js';
import './tables.css';
import {
  COLUMN_TYPES,
  type Column,
  FILTER_OPS,
  type Filter,
  type FilterOp,
  type Row,
  SYSTEM_COLUMNS,
  type Sort,
  createTableSql,
  gridSql,
  insertSql,
  loadTables,
  runSql,
  updateSql,
} from './tables/statements.js';

const PAGE_SIZE = 25;
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,22}$/;

/**
 * Tables: the workspace's tables (from the scoped information schema), a grid over one with filter, sort and paging
 * compiled to SQL, inline edits and new rows sent as UPDATE / INSERT under the member's own policies, live changes over
 * /ws, and a new table (CREATE TABLE). Everything goes through POST /api/v1/workspaces/{id}/sql.
 */
export default function Page({ workspace, rest }: SectionProps) {
  const tables = useLoad(() => loadTables(workspace.id), [workspace.id]);
  const list = tables.data.value;
  const chosen = rest[0] ?? (list && list.size > 0 ? [...list.keys()][0] : undefined);
  const columns = chosen ? list?.get(chosen) : undefined;
  return (
    <>
      <h1>Tables</h1>
      <Problem error={tables.error.value} />
      <div class="tables-layout">
        <nav class="table-list" aria-label="Tables of the workspace">
          <h2>In this workspace</h2>
          {list === null ? (
            <p role="status">Loading…</p>
          ) : list.size === 0 ? (
            <p>No tables yet.</p>
          ) : (
            <ul>
              {[...list.keys()].map((t) => (
                <li key={t}>
                  <Link to={sectionPath(workspace.id, 'tables', t)} current={t === chosen}>
                    {t}
                  </Link>
                </li>
              ))}
            </ul>
          )}
          <CreateTable workspaceId={workspace.id} onCreated={async (name) => {
            await tables.reload();
            navigate(sectionPath(workspace.id, 'tables', name));
          }} />
        </nav>
        <section class="table-view" aria-label={chosen ? `Table ${chosen}` : 'Table'}>
          {chosen && list && !columns && <p>There is no table {chosen} in this workspace.</p>}
          {chosen && columns && <TableGrid key={chosen} workspaceId={workspace.id} table={chosen} columns={columns} />}
        </section>
      </div>
    </>
  );
}

/** The grid over one table. */
function TableGrid({ workspaceId, table, columns }: { workspaceId: string; table: string; columns: Column[] }) {
  const filters = useSignal<Filter[]>([]);
  const sort = useSignal<Sort | null>(null);
  const offset = useSignal(0);
  const rows = useSignal<Row[] | null>(null);
  const more = useSignal(false);
  const sent = useSignal('');
  const wrote = useSignal('');
  const executed = useSignal('');
  const error = useSignal<unknown>(null);
  const editError = useSignal<unknown>(null);
  const status = useSignal('');
  const saved = useSignal('');
  const live = useSignal(false);
  const hasId = columns.some((c) => c.name === 'id');
  const shown = columns.filter((c) => c.name !== 'deleted_at');
  const names = shown.map((c) => c.name);

  const load = async () => {
    const sql = gridSql(table, filters.value, sort.value, PAGE_SIZE, offset.value, hasId);
    sent.value = sql;
    try {
      const r = await runSql(workspaceId, sql);
      const got = r.rows ?? [];
      more.value = got.length > PAGE_SIZE;
      rows.value = got.slice(0, PAGE_SIZE);
      executed.value = r.executed_sql;
      error.value = null;
    } catch (err) {
      rows.value = [];
      more.value = false;
      error.value = err;
    }
  };
  useEffect(() => {
    load();
  }, [filters.value, sort.value, offset.value]);

  useLive(
    workspaceId,
    [table],
    (m: LiveMessage) => {
      if (m.type !== 'RowInserted' && m.type !== 'RowUpdated' && m.type !== 'RowDeleted') return;
      if (m.data.table_name !== table || rows.value === null) return;
      const current = rows.value;
      if (m.type === 'RowDeleted') {
        rows.value = current.filter((r) => String(r.id) !== String(m.data.id));
        status.value = 'A row was deleted.';
        return;
      }
      const row = m.data.row;
      const at = current.findIndex((r) => String(r.id) === String(row.id));
      if (row.deleted_at !== null && row.deleted_at !== undefined) {
        rows.value = current.filter((r) => String(r.id) !== String(row.id));
      } else if (at >= 0) {
        rows.value = current.map((r, i) => (i === at ? { ...r, ...row } : r));
        status.value = 'A row was changed.';
      } else if (m.type === 'RowInserted') {
        rows.value = [...current, row];
        status.value = 'A new row arrived.';
      }
    },
    (open) => (live.value = open),
  );

  const save = async (sql: string, done: string): Promise<boolean> => {
    editError.value = null;
    saved.value = '';
    try {
      const r = await runSql(workspaceId, sql);
      wrote.value = sql;
      saved.value = `${done} (${r.affected_rows ?? 0} row${r.affected_rows === 1 ? '' : 's'} changed).`;
      await load();
      return true;
    } catch (err) {
      wrote.value = sql;
      editError.value = err;
      return false;
    }
  };

  const toggleSort = (column: string) => {
    const s = sort.value;
    sort.value = s?.column !== column ? { column, descending: false } : !s.descending ? { column, descending: true } : null;
    offset.value = 0;
  };

  return (
    <>
      <h2>{table}</h2>
      <p class="live" role="status">
        {live.value ? 'Live: changes by others appear here.' : 'Live updates: connecting…'} {status.value}
      </p>
      <Filters columns={names} filters={filters} onChange={() => (offset.value = 0)} />
      <figure class="ran">
        <figcaption>SQL that ran</figcaption>
        <pre>{sent.value}</pre>
        {executed.value && (
          <details>
            <summary>As the service ran it (with your policies)</summary>
            <pre>{executed.value}</pre>
          </details>
        )}
      </figure>
      {wrote.value && (
        <figure class="ran">
          <figcaption>Last change sent</figcaption>
          <pre>{wrote.value}</pre>
        </figure>
      )}
      <Problem error={error.value} />
      <p role="status" class="saved">
        {saved.value}
      </p>
      <Problem error={editError.value} label="The change was refused" />
      {rows.value === null ? (
        <p role="status">Loading…</p>
      ) : (
        <div class="scroll">
          <table class="data">
            <caption>
              Rows of {table} (soft-deleted rows are hidden){hasId ? '' : ' — no id column: cells cannot be edited here'}
            </caption>
            <thead>
              <tr>
                {names.map((c) => {
                  const s = sort.value?.column === c ? sort.value : null;
                  return (
                    <th key={c} scope="col" aria-sort={s ? (s.descending ? 'descending' : 'ascending') : undefined}>
                      <button type="button" class="sort" aria-label={`Sort by ${c}`} onClick={() => toggleSort(c)}>
                        <span dir="auto">{c}</span> {s ? (s.descending ? '▼' : '▲') : ''}
                      </button>
                    </th>
                  );
                })}
              </tr>
            </thead>
            <tbody>
              {rows.value.length === 0 && (
                <tr>
                  <td colSpan={names.length}>No rows.</td>
                </tr>
              )}
              {rows.value.map((r, i) => (
                <tr key={hasId ? String(r.id) : i}>
                  {names.map((c) => (
                    <Cell key={c} row={r} column={c} editable={hasId && !SYSTEM_COLUMNS.has(c)} onSave={(v) => save(updateSql(table, c, v, r.id), `Saved ${c}`)} onCancel={() => (editError.value = null)} />
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav class="pager" aria-label={`Pages of ${table}`}>
        <button type="button" disabled={offset.value === 0} onClick={() => (offset.value = Math.max(0, offset.value - PAGE_SIZE))}>
          Previous page
        </button>
        <span>
          Rows {rows.value && rows.value.length > 0 ? `${offset.value + 1}–${offset.value + rows.value.length}` : 'none'}
        </span>
        <button type="button" disabled={!more.value} onClick={() => (offset.value = offset.value + PAGE_SIZE)}>
          Next page
        </button>
      </nav>
      <AddRow table={table} columns={columns.filter((c) => !SYSTEM_COLUMNS.has(c.name))} onAdd={(values) => save(insertSql(table, values), 'Row added')} />
    </>
  );
}

/** A value cell: its text, and where it may be edited a button that opens an editor (Enter saves, Escape cancels). */
function Cell({
  row,
  column,
  editable,
  onSave,
  onCancel,
}: { row: Row; column: string; editable: boolean; onSave: (v: string | null) => Promise<boolean>; onCancel: () => void }) {
  const editing = useSignal(false);
  const draft = useSignal('');
  const input = useRef<HTMLInputElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const v = row[column];
  const text = cellText(v);
  useEffect(() => {
    if (editing.value) input.current?.focus();
  }, [editing.value]);
  const close = () => {
    editing.value = false;
    setTimeout(() => opener.current?.focus());
  };
  if (!editable) {
    return (
      <td class={v === null || v === undefined ? 'null' : 'cell'} dir="auto">
        {text}
      </td>
    );
  }
  if (editing.value) {
    return (
      <td class="cell editing">
        <form
          class="cell-editor"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await onSave(draft.value)) close();
          }}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              onCancel();
              close();
            }
          }}
        >
          <input ref={input} aria-label={`New value of ${column}`} value={draft.value} dir="auto" onInput={(e) => (draft.value = (e.target as HTMLInputElement).value)} />
          <button type="submit">Save</button>
          <button
            type="button"
            onClick={async () => {
              if (await onSave(null)) close();
            }}
          >
            Set NULL
          </button>
          <button
            type="button"
            onClick={() => {
              onCancel();
              close();
            }}
          >
            Cancel
          </button>
        </form>
      </td>
    );
  }
  return (
    <td class={v === null || v === undefined ? 'null' : 'cell'}>
      <button
        ref={opener}
        type="button"
        class="cell-button"
        aria-label={`Edit ${column} of row ${cellText(row.id)}: ${text}`}
        dir="auto"
        onClick={() => {
          draft.value = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
          editing.value = true;
        }}
      >
        {text}
      </button>
    </td>
  );
}

/** Filters (column, operator, value), AND-ed; each change reads the first page again. */
function Filters({ columns, filters, onChange }: { columns: string[]; filters: Signal<Filter[]>; onChange: () => void }) {
  const column = useSignal(columns[0] ?? '');
  const op = useSignal<FilterOp>('=');
  const value = useSignal('');
  const needsValue = op.value !== 'is null' && op.value !== 'is not null';
  return (
    <div class="filters">
      <form
        aria-label="Add a filter"
        onSubmit={(e) => {
          e.preventDefault();
          filters.value = [...filters.value, { column: column.value, op: op.value, value: needsValue ? value.value : '' }];
          value.value = '';
          onChange();
        }}
      >
        <span class="pair">
          <label for="filter-column">Filter column</label>
          <select id="filter-column" value={column.value} onChange={(e) => (column.value = (e.target as HTMLSelectElement).value)}>
            {columns.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </span>
        <span class="pair">
          <label for="filter-op">Operator</label>
          <select id="filter-op" value={op.value} onChange={(e) => (op.value = (e.target as HTMLSelectElement).value as FilterOp)}>
            {FILTER_OPS.map((o) => (
              <option key={o.op} value={o.op}>
                {o.label}
              </option>
            ))}
          </select>
        </span>
        {needsValue && (
          <span class="pair">
            <label for="filter-value">Value</label>
            <input id="filter-value" value={value.value} onInput={(e) => (value.value = (e.target as HTMLInputElement).value)} />
          </span>
        )}
        <button type="submit">Add filter</button>
      </form>
      {filters.value.length > 0 && (
        <ul class="chips" aria-label="Filters">
          {filters.value.map((f, i) => (
            <li key={i}>
              <span dir="auto">
                {f.column} {FILTER_OPS.find((o) => o.op === f.op)?.label} {f.op === 'is null' || f.op === 'is not null' ? '' : `“${f.value}”`}
              </span>
              <button
                type="button"
                aria-label={`Remove filter on ${f.column}`}
                onClick={() => {
                  filters.value = filters.value.filter((_, j) => j !== i);
                  onChange();
                }}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A new row: one field per column (system columns are filled by the service); empty fields take their default. */
function AddRow({ table, columns, onAdd }: { table: string; columns: Column[]; onAdd: (values: [string, string][]) => Promise<boolean> }) {
  const values = useSignal<Record<string, string>>({});
  const error = useSignal<unknown>(null);
  if (columns.length === 0) return null;
  return (
    <form
      class="add-row"
      aria-label={`Add a row to ${table}`}
      onSubmit={async (e) => {
        e.preventDefault();
        const filled = columns.filter((c) => (values.value[c.name] ?? '') !== '').map((c): [string, string] => [c.name, values.value[c.name] ?? '']);
        if (filled.length === 0) {
          error.value = new ConsoleError('Fill in at least one field.');
          return;
        }
        error.value = null;
        if (await onAdd(filled)) values.value = {};
      }}
    >
      <h3>Add a row</h3>
      {columns.map((c, i) => (
        <div class="field" key={c.name}>
          <label for={`new-${i}`} dir="auto">
            {c.name} ({c.type})
          </label>
          <input id={`new-${i}`} dir="auto" value={values.value[c.name] ?? ''} onInput={(e) => (values.value = { ...values.value, [c.name]: (e.target as HTMLInputElement).value })} />
        </div>
      ))}
      <button type="submit">Add row</button>
      <Problem error={error.value} />
    </form>
  );
}

/** A new table: its name and columns (the service adds id, created_at, updated_at and deleted_at). */
function CreateTable({ workspaceId, onCreated }: { workspaceId: string; onCreated: (name: string) => Promise<void> }) {
  const name = useSignal('');
  const columns = useSignal<{ name: string; type: string }[]>([{ name: '', type: 'text' }]);
  const error = useSignal<unknown>(null);
  const ran = useSignal('');
  const set = (i: number, patch: Partial<{ name: string; type: string }>) => (columns.value = columns.value.map((c, j) => (j === i ? { ...c, ...patch } : c)));
  return (
    <form
      class="create-table"
      aria-label="Create a table"
      onSubmit={async (e) => {
        e.preventDefault();
        const table = name.value.trim();
        const cols = columns.value.filter((c) => c.name.trim() !== '');
        if (!TABLE_NAME.test(table)) {
          error.value = new ConsoleError('A table name is lower-case letters, digits and _ (at most 23, not starting with a digit).');
          return;
        }
        const sql = createTableSql(table, cols);
        ran.value = sql;
        try {
          await runSql(workspaceId, sql);
          error.value = null;
          name.value = '';
          columns.value = [{ name: '', type: 'text' }];
          await onCreated(table);
        } catch (err) {
          error.value = err;
        }
      }}
    >
      <h2>New table</h2>
      <label for="new-table-name">Table name</label>
      <input id="new-table-name" value={name.value} maxLength={23} onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
      {columns.value.map((c, i) => (
        <fieldset key={i} class="new-column">
          <legend>Column {i + 1}</legend>
          <label for={`col-name-${i}`}>Column {i + 1} name</label>
          <input id={`col-name-${i}`} value={c.name} onInput={(e) => set(i, { name: (e.target as HTMLInputElement).value })} />
          <label for={`col-type-${i}`}>Column {i + 1} type</label>
          <select id={`col-type-${i}`} value={c.type} onChange={(e) => set(i, { type: (e.target as HTMLSelectElement).value })}>
            {COLUMN_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
          {columns.value.length > 1 && (
            <button type="button" aria-label={`Remove column ${i + 1}`} onClick={() => (columns.value = columns.value.filter((_, j) => j !== i))}>
              Remove
            </button>
          )}
        </fieldset>
      ))}
      <button type="button" onClick={() => (columns.value = [...columns.value, { name: '', type: 'text' }])}>
        Add column
      </button>
      <button type="submit">Create table</button>
      {ran.value && <pre>{ran.value}</pre>}
      <Problem error={error.value} />
    </form>
  );
}
