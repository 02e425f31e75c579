import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import { api } from '../../session.js';
import { Grid } from '../../ui/grid.js';
import { ConsoleError, Problem } from '../../ui/problem.js';
import { cellText } from '../../ui/values.js';
import type uPlot from 'uplot';
import type { Series } from './plot.js';

type Chart = View<'PinnedChart'>;
type Row = Record<string, unknown>;

const num = (v: unknown): number | null => {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
};
const isNumeric = (rows: Row[], c: string) => rows.some((r) => r[c] !== null && r[c] !== undefined) && rows.every((r) => r[c] === null || r[c] === undefined || num(r[c]) !== null);

/** The chart's axes from its fields and its rows: x is x_axis_column (else the first column), y the y_axis_columns (else the numeric others). */
function axesOf(chart: Chart, rows: Row[]): { x: string | null; ys: string[]; columns: string[]; missing: string[] } {
  const columns = rows[0] ? Object.keys(rows[0]) : [];
  const x = chart.x_axis_column ?? columns.find((c) => !isNumeric(rows, c)) ?? columns[0] ?? null;
  const ys = chart.y_axis_columns?.length ? chart.y_axis_columns : columns.filter((c) => c !== x && isNumeric(rows, c));
  const wanted = [...(chart.x_axis_column ? [chart.x_axis_column] : []), ...(chart.y_axis_columns ?? [])];
  return { x, ys, columns, missing: rows.length ? wanted.filter((c) => !columns.includes(c)) : [] };
}

/**
 * One pinned chart: its query run by the viewer (POST …/sql, under the viewer's own policies), drawn by its
 * chart_type. Each has a text alternative: a name (the figure's caption) and its values in a visually hidden table.
 */
export function ChartCard({ chart, workspaceId, mayChange, onUnpinned }: { chart: Chart; workspaceId: string; mayChange: boolean; onUnpinned: () => void }) {
  const rows = useSignal<Row[] | null>(null);
  const error = useSignal<unknown>(null);
  const confirming = useSignal(false);
  const unpinError = useSignal<unknown>(null);
  const titleId = `chart-${chart.id}-title`;

  const load = async () => {
    error.value = null;
    try {
      const r = await ok(api.value.POST('/api/v1/workspaces/{id}/sql', { params: { path: { id: workspaceId } }, body: { sql: chart.sql_query } }));
      if ('proposal' in r) throw new ConsoleError('The query of this chart waits for approval instead of running.');
      rows.value = (r.rows ?? []) as Row[];
    } catch (err) {
      error.value = err;
    }
  };
  useEffect(() => {
    load();
  }, [chart.id, chart.sql_query]);

  const unpin = async () => {
    unpinError.value = null;
    try {
      await ok(api.value.DELETE('/api/v1/pinned-charts/{chartId}', { params: { path: { chartId: chart.id }, header: { 'X-Workspace-ID': workspaceId } } }));
      onUnpinned();
    } catch (err) {
      unpinError.value = err;
    }
  };

  const kind = chart.chart_type.trim().toLowerCase();
  return (
    <figure class="chart" aria-labelledby={titleId} data-chart-type={kind}>
      <figcaption>
        <h2 id={titleId} dir="auto">
          {chart.title}
        </h2>
        {chart.description && (
          <p class="description" dir="auto">
            {chart.description}
          </p>
        )}
      </figcaption>
      <Problem error={error.value} label={`Error of the chart ${chart.title}`} />
      {rows.value === null && !error.value && <p role="status">Loading the chart…</p>}
      {rows.value && <ChartBody chart={chart} kind={kind} rows={rows.value} />}
      <div class="chart-tools">
        <button type="button" onClick={load} aria-label={`Refresh the chart ${chart.title}`}>
          Refresh
        </button>
        {mayChange &&
          (confirming.value ? (
            <>
              <button type="button" class="danger" onClick={unpin}>
                Yes, unpin {chart.title}
              </button>
              <button type="button" onClick={() => (confirming.value = false)}>
                Keep it
              </button>
            </>
          ) : (
            <button type="button" onClick={() => (confirming.value = true)} aria-label={`Unpin the chart ${chart.title}`}>
              Unpin
            </button>
          ))}
      </div>
      <Problem error={unpinError.value} label={`Error of unpinning ${chart.title}`} />
    </figure>
  );
}

function ChartBody({ chart, kind, rows }: { chart: Chart; kind: string; rows: Row[] }) {
  const { x, ys, columns, missing } = axesOf(chart, rows);
  if (rows.length === 0) return <p>The query gave no rows for you.</p>;
  if (missing.length) return <p class="error">The result has no column {missing.map((m) => `"${m}"`).join(', ')}: change the chart's axes or its query.</p>;
  if (kind === 'table' || !['bar', 'line', 'pie', 'number'].includes(kind)) {
    const shown = chart.y_axis_columns?.length ? columns.filter((c) => chart.y_axis_columns?.includes(c) || c === chart.x_axis_column) : columns;
    return (
      <>
        {kind !== 'table' && <p class="hint">Chart type "{chart.chart_type}" is not one the console draws: shown as a table.</p>}
        <Grid caption={`Rows of ${chart.title}`} columns={shown} rows={rows} pageSize={20} />
      </>
    );
  }
  if (kind === 'number') {
    const col = ys[0] ?? columns[0] ?? '';
    const v = rows[0]?.[col];
    const n = num(v);
    return (
      <div class="big-number">
        <p class="figure" dir="auto">
          {n !== null ? n.toLocaleString() : cellText(v)}
        </p>
        <p class="hint" dir="auto">
          {col}
          {rows.length > 1 ? ` (the first of ${rows.length} rows)` : ''}
        </p>
      </div>
    );
  }
  if (!x || ys.length === 0) return <p class="error">This chart needs an x column and at least one numeric y column.</p>;
  const labels = rows.map((r) => cellText(r[x]));
  const series: Series[] = ys.map((y) => ({ name: y, values: rows.map((r) => num(r[y])) }));
  const pointsText = `${rows.length} ${rows.length === 1 ? 'point' : 'points'}`;
  return (
    <>
      {kind === 'pie' ? (
        <Pie title={chart.title} labels={labels} values={series[0]?.values ?? []} />
      ) : (
        <>
          <Plot kind={kind as 'bar' | 'line'} labels={labels} series={series} name={`${kind === 'bar' ? 'Bar' : 'Line'} chart of ${ys.join(', ')} by ${x}, ${pointsText}`} />
          <ul class="legend" aria-hidden="true">
            {series.map((s, i) => (
              <li key={s.name}>
                <span class={`swatch swatch-${i % 8}`} /> <span dir="auto">{s.name}</span>
              </li>
            ))}
          </ul>
        </>
      )}
      <ValuesTable title={chart.title} x={x} ys={kind === 'pie' ? ys.slice(0, 1) : ys} rows={rows} />
    </>
  );
}

/** The chart's values as a table for screen readers (visually hidden): its text alternative. */
function ValuesTable({ title, x, ys, rows }: { title: string; x: string; ys: string[]; rows: Row[] }) {
  return (
    <div class="visually-hidden">
    <table class="chart-values">
      <caption>Values of {title}</caption>
      <thead>
        <tr>
          <th scope="col">{x}</th>
          {ys.map((y) => (
            <th scope="col" key={y}>
              {y}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i}>
            <th scope="row">{cellText(r[x])}</th>
            {ys.map((y) => (
              <td key={y}>{cellText(r[y])}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

/** A bar or line chart drawn by uPlot (its own chunk, with its CSS); the number of points it holds is on the element. */
function Plot({ kind, labels, series, name }: { kind: 'bar' | 'line'; labels: string[]; series: Series[]; name: string }) {
  const host = useRef<HTMLDivElement>(null);
  const failed = useSignal<unknown>(null);
  const key = JSON.stringify([kind, labels, series]);
  useEffect(() => {
    let gone = false;
    let plot: uPlot | undefined;
    let observer: ResizeObserver | undefined;
    const widthOf = (el: HTMLElement) => Math.max(240, Math.floor(el.clientWidth) || 600);
    import('./plot.js').then(
      ({ draw }) => {
        const el = host.current;
        if (gone || !el) return;
        const u = draw(el, kind, labels, series, widthOf(el));
        plot = u;
        // What the instance holds: the number of x positions (bars or points) and of series.
        el.dataset.points = String(u.data[0]?.length ?? 0);
        el.dataset.series = String(u.data.length - 1);
        observer = new ResizeObserver(() => plot?.setSize({ width: widthOf(el), height: 260 }));
        observer.observe(el);
      },
      (err) => (failed.value = err),
    );
    return () => {
      gone = true;
      observer?.disconnect();
      plot?.destroy();
    };
  }, [key]);
  return (
    <>
      <div ref={host} class="plot" role="img" aria-label={name} />
      {failed.value !== null && <p class="error">The chart could not be drawn; its values are listed below.</p>}
    </>
  );
}

/** A pie, drawn as SVG (uPlot has none): one slice per row with a positive value, each with its label and share. */
function Pie({ title, labels, values }: { title: string; labels: string[]; values: (number | null)[] }) {
  const slices = labels.map((label, i) => ({ label, value: values[i] ?? 0 })).filter((s) => s.value > 0);
  const total = slices.reduce((a, s) => a + s.value, 0);
  const r = 90;
  let angle = -Math.PI / 2;
  const pct = (v: number) => `${((v / total) * 100).toFixed(1)}%`;
  return (
    <div class="pie">
      <svg viewBox="-100 -100 200 200" width="220" height="220" role="img" aria-label={`Pie chart of ${title}, ${slices.length} ${slices.length === 1 ? 'slice' : 'slices'}`}>
        {slices.length === 1 ? (
          <circle class="slice slice-0" r={r} cx="0" cy="0">
            <title>{`${slices[0]?.label}: ${slices[0]?.value} (100%)`}</title>
          </circle>
        ) : (
          slices.map((s, i) => {
            const a0 = angle;
            const a1 = angle + (s.value / total) * 2 * Math.PI;
            angle = a1;
            const large = a1 - a0 > Math.PI ? 1 : 0;
            const d = `M 0 0 L ${r * Math.cos(a0)} ${r * Math.sin(a0)} A ${r} ${r} 0 ${large} 1 ${r * Math.cos(a1)} ${r * Math.sin(a1)} Z`;
            return (
              <path key={i} class={`slice slice-${i % 8}`} d={d}>
                <title>{`${s.label}: ${s.value} (${pct(s.value)})`}</title>
              </path>
            );
          })
        )}
      </svg>
      <ul class="legend pie-legend" aria-hidden="true">
        {slices.map((s, i) => (
          <li key={i}>
            <span class={`swatch swatch-${i % 8}`} /> <span dir="auto">{s.label.length > 60 ? `${s.label.slice(0, 59)}…` : s.label}</span>: {s.value.toLocaleString()} ({pct(s.value)})
          </li>
        ))}
      </ul>
      {slices.length < labels.length && <p class="hint">Rows with no positive value are left out of the pie.</p>}
    </div>
  );
}
