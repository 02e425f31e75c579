import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { api } from '../../session.js';
import { Problem } from '../../ui/problem.js';

type Explanation = View<'SqlExplanation'>;
type RowExplanation = View<'SqlRowExplanation'>;
export type Member = View<'Member'>;

/** The row whose policy conditions are explained: from the last run's result (its statement and viewer). */
export interface RowTarget {
  sql: string;
  rowId: string;
  asUser: Member | null;
  /** Changes on every request, so asking for the same row again explains it again. */
  seq: number;
}

const DECISION: Record<Explanation['access'][number]['decision'], string> = {
  allow: 'allowed',
  deny: 'denied by a deny policy',
  default_deny: 'denied: no allow policy applies (default deny)',
};

const json = (v: unknown) => JSON.stringify(v);
const whoOf = (m: Member | null) => (m ? `${m.user_name} <${m.user_email}>` : 'you');

/**
 * The explain panel: for the statement in the editor, per table and operation, the decision, the policies that
 * applied and the predicate the rewriter puts in (POST …/sql/explain); "view as member" for admins (the intersection
 * rule, said on the page); and for a row of the result, which conditions of which policy it passes.
 */
export function ExplainPanel({
  workspaceId,
  sql,
  admin,
  members,
  viewer,
  onViewer,
  onRunAs,
  row,
}: {
  workspaceId: string;
  sql: string;
  admin: boolean;
  /** The other members (admins only; null while loading). */
  members: Member[] | null;
  viewer: Member | null;
  onViewer: (m: Member | null) => void;
  onRunAs: () => void;
  row: RowTarget | null;
}) {
  const explanation = useSignal<Explanation | null>(null);
  const explainedSql = useSignal('');
  const explainedFor = useSignal('');
  const error = useSignal<unknown>(null);
  const busy = useSignal(false);
  const rowResult = useSignal<RowExplanation | null>(null);
  const rowError = useSignal<unknown>(null);

  const explain = async () => {
    const text = sql.trim();
    if (!text) return;
    busy.value = true;
    error.value = null;
    try {
      explanation.value = await ok(
        api.value.POST('/api/v1/workspaces/{id}/sql/explain', {
          params: { path: { id: workspaceId } },
          body: viewer ? { sql: text, as_user_id: viewer.user_id } : { sql: text },
        }),
      );
      explainedSql.value = text;
      explainedFor.value = whoOf(viewer);
    } catch (err) {
      explanation.value = null;
      error.value = err;
    } finally {
      busy.value = false;
    }
  };
  useEffect(() => {
    explain();
  }, [viewer?.user_id]);

  useEffect(() => {
    if (!row) return;
    rowResult.value = null;
    rowError.value = null;
    ok(
      api.value.POST('/api/v1/workspaces/{id}/sql/explain', {
        params: { path: { id: workspaceId } },
        body: { sql: row.sql, row_id: row.rowId, ...(row.asUser ? { as_user_id: row.asUser.user_id } : {}) },
      }),
    ).then(
      (r) => (rowResult.value = r.row ?? null),
      (err) => (rowError.value = err),
    );
  }, [row?.seq]);

  const e = explanation.value;
  return (
    <section id="explain-panel" class="explain" aria-labelledby="explain-title">
      <h2 id="explain-title">Explain</h2>
      {admin && (
        <div class="view-as">
          <label for="view-as">View as member</label>
          <select
            id="view-as"
            value={viewer?.user_id ?? ''}
            onChange={(ev) => onViewer(members?.find((m) => m.user_id === (ev.target as HTMLSelectElement).value) ?? null)}
          >
            <option value="">Yourself</option>
            {(members ?? []).map((m) => (
              <option key={m.user_id} value={m.user_id}>
                {`${m.user_name} <${m.user_email}> (${m.role})`}
              </option>
            ))}
          </select>
          <p class="hint" id="view-as-rule">
            Viewing as a member runs a read under both your select policies and theirs: a row is shown only when both of you may read it. It
            answers "which of the rows I can see would this member see"; it never shows you a row your own policies hide, and it runs reads
            only.
          </p>
          {viewer && (
            <button type="button" onClick={onRunAs} aria-describedby="view-as-rule">
              Run as {whoOf(viewer)}
            </button>
          )}
        </div>
      )}
      <div class="explain-tools">
        <button type="button" onClick={explain} disabled={busy.value}>
          Explain the statement
        </button>
        <span role="status">{busy.value ? 'Explaining…' : e ? `Explained for ${explainedFor.value}.` : ''}</span>
      </div>
      <Problem error={error.value} label="Error of the explanation" />
      {e && (
        <div class="explanation">
          {explainedSql.value !== sql.trim() && <p class="hint">The statement changed since: explain it again to see the new one.</p>}
          {e.denied && (
            <p class="denied">
              <strong>Would be denied:</strong> {e.denied}
            </p>
          )}
          {e.ddl_allowed !== null && <p>{e.ddl_allowed ? 'This schema change is allowed for this user.' : 'This user may not change the schema (DDL_FORBIDDEN).'}</p>}
          {e.access.length === 0 && e.ddl_allowed === null && <p>No table policies apply to this statement.</p>}
          {e.access.map((a) => (
            <div class="access" key={`${a.table}/${a.operation}`}>
              <h3>
                <code>{a.table}</code>, {a.operation}: {DECISION[a.decision]}
                {a.denied_by ? ` "${a.denied_by}"` : ''}
              </h3>
              <p>
                Predicate injected:{' '}
                {a.predicate ? <code class="sql">{a.predicate}</code> : a.decision === 'allow' ? 'none (every row)' : 'none (nothing runs)'}
              </p>
              {a.denial && <p class="denied">{a.denial}</p>}
              {a.policies.length > 0 ? (
                <div class="scroll">
                  <table>
                    <caption>
                      Policies that applied to {a.table} ({a.operation})
                    </caption>
                    <thead>
                      <tr>
                        <th scope="col">Policy</th>
                        <th scope="col">Mode</th>
                        <th scope="col">Condition</th>
                        <th scope="col">Predicate</th>
                      </tr>
                    </thead>
                    <tbody>
                      {a.policies.map((p) => (
                        <tr key={p.id}>
                          <td class="value" dir="auto">
                            {p.name}
                          </td>
                          <td>{p.mode}</td>
                          <td class="value">
                            <code>{p.condition === null ? 'none (every row)' : json(p.condition)}</code>
                          </td>
                          <td class="value">
                            <code>{p.predicate ?? 'TRUE'}</code>
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              ) : (
                <p>No policy of this user's groups applies to it.</p>
              )}
            </div>
          ))}
          {e.transformed_sql && (
            <>
              <h3>The statement as it would run</h3>
              <pre class="sql-text">{e.transformed_sql}</pre>
            </>
          )}
        </div>
      )}
      {row && (
        <div class="row-explain">
          <h3>
            Row <code>{row.rowId}</code> for {whoOf(row.asUser)}
          </h3>
          <Problem error={rowError.value} label="Error of the row explanation" />
          {!rowResult.value && !rowError.value && <p role="status">Explaining the row…</p>}
          {rowResult.value && <RowView r={rowResult.value} who={whoOf(row.asUser)} />}
        </div>
      )}
    </section>
  );
}

function RowView({ r, who }: { r: RowExplanation; who: string }) {
  return (
    <>
      <p role="status">
        {r.visible ? `Visible: ${who} may read this row of ${r.table}.` : `Hidden: ${who} may not read this row of ${r.table}.`}
      </p>
      {r.policies.length === 0 ? (
        <p>No select policy of this user applies to {r.table}.</p>
      ) : (
        <div class="scroll">
          <table>
            <caption>Conditions of each select policy on this row</caption>
            <thead>
              <tr>
                <th scope="col">Policy</th>
                <th scope="col">Mode</th>
                <th scope="col">Row matches</th>
                <th scope="col">Conditions</th>
              </tr>
            </thead>
            <tbody>
              {r.policies.map((p) => (
                <tr key={p.id}>
                  <td class="value" dir="auto">
                    {p.name}
                  </td>
                  <td>{p.mode}</td>
                  <td>{p.matches ? (p.mode === 'allow' ? 'yes: lets it through' : 'yes: hides it') : 'no'}</td>
                  <td class="value">
                    {p.conditions.length === 0 ? (
                      'no condition (every row)'
                    ) : (
                      <ul class="conditions">
                        {p.conditions.map((c, i) => (
                          <li key={i} class={c.matches ? 'pass' : 'fail'}>
                            <code>{json(c.condition)}</code>: {c.matches ? 'matches' : 'does not match'}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
