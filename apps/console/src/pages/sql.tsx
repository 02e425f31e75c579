import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { sectionPath } from '../router.js';
import type { SectionProps } from '../sections.js';
import { api } from '../session.js';
import { CodeEditor } from '../ui/editor.js';
import { Grid } from '../ui/grid.js';
import { Link } from '../ui/link.js';
import { Problem } from '../ui/problem.js';
import { when } from '../ui/values.js';
import { ExplainPanel, type Member, type RowTarget } from './sql/explain.js';
import { type HistoryEntry, addToHistory, clearHistory, readDraft, readHistory, saveDraft } from './sql/history.js';
import { PinForm } from './sql/pin.js';
import './sql.css';

type Row = Record<string, unknown>;
type Proposal = View<'SqlProposal'>;

/** What the last statement gave. */
type Outcome =
  | { kind: 'rows'; sql: string; rows: Row[]; columns: string[]; executedSql: string; affectedRows: number | null; asUser: Member | null; seq: number }
  | { kind: 'held'; sql: string; proposal: Proposal };

/** The workspace's tables and their columns, for completion: the scoped information schema, through the SQL endpoint. */
const SCHEMA_SQL = 'SELECT table_name, column_name FROM information_schema.columns ORDER BY table_name, ordinal_position';

const isNumeric = (v: unknown) => typeof v === 'number' || (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)));
const summary = (o: Outcome) =>
  o.kind === 'held' ? 'waits for approval' : o.affectedRows !== null ? `${o.affectedRows} rows affected` : `${o.rows.length} ${o.rows.length === 1 ? 'row' : 'rows'}`;

/** SQL editor: write a statement, run it (Ctrl/Cmd+Enter), see its rows, the SQL as run, why (explain), pin it. */
export default function Page({ workspace }: SectionProps) {
  const ws = workspace.id;
  const admin = workspace.role === 'admin';
  const text = useSignal(readDraft(ws) ?? 'SELECT ');
  const schema = useSignal<Record<string, string[]> | undefined>(undefined);
  const running = useSignal(false);
  const outcome = useSignal<Outcome | null>(null);
  const error = useSignal<unknown>(null);
  const history = useSignal<HistoryEntry[]>(readHistory(ws));
  const explainOpen = useSignal(false);
  const pinOpen = useSignal(false);
  const viewer = useSignal<Member | null>(null);
  const members = useSignal<Member[] | null>(null);
  const rowTarget = useSignal<RowTarget | null>(null);
  const selected = useSignal<number | null>(null);
  const seq = useSignal(0);

  const loadSchema = () =>
    ok(api.value.POST('/api/v1/workspaces/{id}/sql', { params: { path: { id: ws } }, body: { sql: SCHEMA_SQL } })).then(
      (r) => {
        const tables: Record<string, string[]> = {};
        for (const row of 'rows' in r ? (r.rows ?? []) : []) {
          const t = String(row.table_name);
          tables[t] = [...(tables[t] ?? []), String(row.column_name)];
        }
        schema.value = tables;
      },
      () => undefined, // completion of keywords only
    );

  useEffect(() => {
    loadSchema();
    if (admin) {
      Promise.all([ok(api.value.GET('/api/v1/auth/me')), ok(api.value.GET('/api/v1/workspaces/{id}/members', { params: { path: { id: ws }, query: { limit: 1000 } } }))]).then(
        ([me, list]) => (members.value = list.filter((m) => m.user_id !== me.id)),
        () => (members.value = []),
      );
    }
  }, [ws]);

  const remember = (sql: string, what: string) => (history.value = addToHistory(ws, { sql, at: new Date().toISOString(), outcome: what }));

  const run = async () => {
    const sql = text.value.trim();
    if (!sql || running.value) return;
    running.value = true;
    error.value = null;
    const as = viewer.value;
    try {
      const r = await ok(api.value.POST('/api/v1/workspaces/{id}/sql', { params: { path: { id: ws } }, body: as ? { sql, as_user_id: as.user_id } : { sql } }));
      if ('proposal' in r) {
        outcome.value = { kind: 'held', sql, proposal: r.proposal };
      } else {
        const rows = (r.rows ?? []) as Row[];
        const affected = 'affected_rows' in r ? r.affected_rows : null;
        seq.value += 1;
        outcome.value = { kind: 'rows', sql, rows, columns: rows[0] ? Object.keys(rows[0]) : [], executedSql: r.executed_sql, affectedRows: affected, asUser: as, seq: seq.value };
        selected.value = null;
        rowTarget.value = null;
        // A schema change (or any write) may add tables or columns to complete.
        if (affected !== null) loadSchema();
      }
      remember(sql, summary(outcome.value));
    } catch (err) {
      error.value = err;
      outcome.value = null;
      remember(sql, (err as { code?: string }).code ?? 'failed');
    } finally {
      running.value = false;
    }
  };

  const o = outcome.value;
  const rowsOutcome = o?.kind === 'rows' ? o : null;
  const canPin = rowsOutcome !== null && rowsOutcome.affectedRows === null && rowsOutcome.columns.length > 0 && rowsOutcome.asUser === null;
  const numeric = rowsOutcome ? rowsOutcome.columns.filter((c) => rowsOutcome.rows.some((r) => r[c] !== null) && rowsOutcome.rows.every((r) => r[c] === null || isNumeric(r[c]))) : [];
  const explainRow = (row: Row, index: number) => {
    if (!rowsOutcome) return;
    selected.value = index;
    seq.value += 1;
    // For whoever the explain panel views as now (a row of your own result, checked against a member's policies).
    rowTarget.value = { sql: rowsOutcome.sql, rowId: String(row.id), asUser: viewer.value, seq: seq.value };
    explainOpen.value = true;
  };

  return (
    <div class="sql-page">
      <h1>SQL editor</h1>
      <p class="hint" id="sql-keys">
        One statement. Ctrl+Enter (⌘+Enter) runs it; Escape then Tab leaves the editor.
      </p>
      <CodeEditor
        language="sql"
        label="SQL statement"
        value={text.value}
        onChange={(v) => {
          text.value = v;
          saveDraft(ws, v);
        }}
        onRun={run}
        {...(schema.value ? { schema: schema.value } : {})}
      />
      <div class="sql-tools">
        <button type="button" class="primary" onClick={run} disabled={running.value} aria-describedby="sql-keys">
          {viewer.value ? `Run as ${viewer.value.user_name}` : 'Run'}
        </button>
        <button type="button" aria-expanded={explainOpen.value} aria-controls="explain-panel" onClick={() => (explainOpen.value = !explainOpen.value)}>
          {explainOpen.value ? 'Close the explain panel' : 'Explain'}
        </button>
        {canPin && (
          <button type="button" aria-expanded={pinOpen.value} onClick={() => (pinOpen.value = !pinOpen.value)}>
            Pin as chart
          </button>
        )}
        <span role="status" class="run-status">
          {running.value ? 'Running…' : ''}
        </span>
      </div>
      <Problem error={error.value} label="Error of the statement" />
      {viewer.value && (
        <p class="viewing-as" role="status">
          Viewing as {viewer.value.user_name} &lt;{viewer.value.user_email}&gt;: reads show only the rows you and they may both read.
        </p>
      )}
      {explainOpen.value && (
        <ExplainPanel
          workspaceId={ws}
          sql={text.value}
          admin={admin}
          members={members.value}
          viewer={viewer.value}
          onViewer={(m) => (viewer.value = m)}
          onRunAs={run}
          row={rowTarget.value}
        />
      )}
      {o?.kind === 'held' && (
        <div class="held" role="status">
          <p>
            <strong>This statement waits for approval; nothing ran.</strong> It is stored as proposal <code>{o.proposal.id}</code> ({o.proposal.operation} on{' '}
            {o.proposal.affected_tables.join(', ') || 'no table'}), until {when(o.proposal.expires_at)}.
          </p>
          <p>
            <Link to={sectionPath(ws, 'approvals')}>See it on the Approvals page</Link>
          </p>
        </div>
      )}
      {rowsOutcome && (
        <section class="result" aria-labelledby="result-title">
          <h2 id="result-title">Result</h2>
          <p role="status" class="count">
            {rowsOutcome.affectedRows !== null
              ? `${rowsOutcome.affectedRows} ${rowsOutcome.affectedRows === 1 ? 'row' : 'rows'} affected${rowsOutcome.rows.length ? `, ${rowsOutcome.rows.length} returned` : ''}.`
              : `${rowsOutcome.rows.length} ${rowsOutcome.rows.length === 1 ? 'row' : 'rows'}${rowsOutcome.asUser ? ` that you and ${rowsOutcome.asUser.user_name} may both read` : ''}.`}
          </p>
          {rowsOutcome.columns.length > 0 && (
            <Grid
              key={rowsOutcome.seq}
              caption={rowsOutcome.asUser ? `Rows of the statement, as ${rowsOutcome.asUser.user_name}` : 'Rows of the statement'}
              columns={rowsOutcome.columns}
              rows={rowsOutcome.rows}
              selected={selected.value}
              {...(rowsOutcome.columns.includes('id')
                ? {
                    actions: (row: Row, index: number) => (
                      <button type="button" onClick={() => explainRow(row, index)}>
                        Explain row {index + 1}
                      </button>
                    ),
                  }
                : {})}
            />
          )}
          <h3 id="executed-title">Executed SQL</h3>
          <pre class="sql-text" id="executed-sql">
            {rowsOutcome.executedSql}
          </pre>
        </section>
      )}
      {pinOpen.value && canPin && rowsOutcome && <PinForm key={rowsOutcome.seq} workspaceId={ws} sql={rowsOutcome.sql} columns={rowsOutcome.columns} numeric={numeric} />}
      <section class="history" aria-labelledby="history-title">
        <h2 id="history-title">History of this session</h2>
        {history.value.length === 0 ? (
          <p>No statements yet.</p>
        ) : (
          <>
            <ol>
              {history.value.map((h, i) => (
                <li key={`${h.at}-${i}`}>
                  <button type="button" class="history-item" onClick={() => {
                      text.value = h.sql;
                      saveDraft(ws, h.sql);
                    }} aria-label={`Load into the editor: ${h.sql}`}>
                    <code>{h.sql}</code>
                  </button>
                  <span class="hint">
                    {h.outcome}, {when(h.at)}
                  </span>
                </li>
              ))}
            </ol>
            <button
              type="button"
              onClick={() => {
                clearHistory(ws);
                history.value = [];
              }}
            >
              Clear the history
            </button>
          </>
        )}
      </section>
    </div>
  );
}
