import { ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { sectionPath } from '../../router.js';
import { api } from '../../session.js';
import { Link } from '../../ui/link.js';
import { Problem } from '../../ui/problem.js';

export const CHART_TYPES = ['bar', 'line', 'pie', 'number', 'table'] as const;

/**
 * Pins the statement as a chart of the dashboard (POST /api/v1/pinned-charts): the statement as written is stored,
 * and every viewer of the dashboard runs it under their own policies. The axes are columns of the result.
 */
export function PinForm({ workspaceId, sql, columns, numeric }: { workspaceId: string; sql: string; columns: string[]; numeric: string[] }) {
  const title = useSignal('');
  const type = useSignal<(typeof CHART_TYPES)[number]>('bar');
  const x = useSignal(columns.find((c) => !numeric.includes(c)) ?? columns[0] ?? '');
  const ys = useSignal<string[]>(numeric.filter((c) => c !== x.value).slice(0, 1));
  const error = useSignal<unknown>(null);
  const pinned = useSignal<string | null>(null);
  const busy = useSignal(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    busy.value = true;
    error.value = null;
    pinned.value = null;
    try {
      const noX = type.value === 'number' || type.value === 'table';
      const chart = await ok(
        api.value.POST('/api/v1/pinned-charts', {
          params: { header: { 'X-Workspace-ID': workspaceId } },
          body: {
            title: title.value.trim(),
            sql_query: sql,
            chart_type: type.value,
            x_axis_column: noX || !x.value ? null : x.value,
            y_axis_columns: ys.value.length ? ys.value : null,
          },
        }),
      );
      pinned.value = chart.title;
    } catch (err) {
      error.value = err;
    } finally {
      busy.value = false;
    }
  };

  return (
    <form class="pin" onSubmit={submit} aria-labelledby="pin-title">
      <h2 id="pin-title">Pin the query as a chart</h2>
      <div class="field">
        <label for="pin-chart-title">Chart title</label>
        <input id="pin-chart-title" required maxLength={255} value={title.value} onInput={(e) => (title.value = (e.target as HTMLInputElement).value)} />
      </div>
      <div class="field">
        <label for="pin-chart-type">Chart type</label>
        <select id="pin-chart-type" value={type.value} onChange={(e) => (type.value = (e.target as HTMLSelectElement).value as (typeof CHART_TYPES)[number])}>
          {CHART_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </div>
      {type.value !== 'number' && type.value !== 'table' && (
        <div class="field">
          <label for="pin-chart-x">{type.value === 'pie' ? 'Label column' : 'X axis column'}</label>
          <select id="pin-chart-x" value={x.value} onChange={(e) => (x.value = (e.target as HTMLSelectElement).value)}>
            {columns.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
      )}
      <fieldset class="field">
        <legend>{type.value === 'table' ? 'Columns shown (none: all)' : type.value === 'pie' || type.value === 'number' ? 'Value column' : 'Y axis columns'}</legend>
        {columns.map((c, i) => (
          <label key={c} class="check">
            <input
              type="checkbox"
              id={`pin-y-${i}`}
              checked={ys.value.includes(c)}
              onChange={(e) => {
                const on = (e.target as HTMLInputElement).checked;
                ys.value = on ? [...ys.value, c] : ys.value.filter((v) => v !== c);
              }}
            />{' '}
            <span dir="auto">{c}</span>
          </label>
        ))}
      </fieldset>
      <div class="pin-tools">
        <button type="submit" disabled={busy.value}>
          Pin to the dashboard
        </button>
        <span role="status">
          {pinned.value !== null && (
            <>
              Pinned "{pinned.value}". <Link to={sectionPath(workspaceId, 'dashboard')}>Open the dashboard</Link>
            </>
          )}
        </span>
      </div>
      <Problem error={error.value} label="Error of pinning" />
    </form>
  );
}
