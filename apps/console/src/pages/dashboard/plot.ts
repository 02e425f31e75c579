import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/**
 * uPlot, in a chunk of its own (the dashboard loads it the first time a bar or line chart is shown). uPlot draws on a
 * canvas and sizes its elements through el.style (CSSOM), which the page's `style-src 'self'` allows; its legend is
 * off (the page draws its own, as text). The x axis is the row's position; its labels are the x column's values.
 */
export const PALETTE = ['#1547a8', '#b4451b', '#1d7a3a', '#7a2f9e', '#8a6d00', '#0b7285', '#a61e4d', '#495057'];

export interface Series {
  name: string;
  values: (number | null)[];
}

const short = (s: string) => (s.length > 14 ? `${s.slice(0, 13)}…` : s);

export function draw(el: HTMLElement, kind: 'bar' | 'line', labels: string[], series: Series[], width: number): uPlot {
  const xs = labels.map((_, i) => i);
  const n = series.length;
  const barsOf = (i: number) => {
    // Two series: side by side; more overlap (each narrower than the one before).
    if (n === 2) return uPlot.paths.bars?.({ size: [0.4, 80], align: i === 0 ? -1 : 1 });
    return uPlot.paths.bars?.({ size: [Math.max(0.2, 0.7 - i * 0.15), 100] });
  };
  const opts: uPlot.Options = {
    width,
    height: 260,
    legend: { show: false },
    scales: { x: { time: false, range: (_u, min, max) => [min - 0.6, max + 0.6] } },
    axes: [
      {
        incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000],
        // Room for the longest (shortened) label between two ticks, so labels never overlap.
        space: Math.min(110, Math.max(30, 8 + 7 * Math.max(0, ...labels.map((l) => short(l).length)))),
        values: (_u, splits) => splits.map((s) => (Number.isInteger(s) && labels[s] !== undefined ? short(labels[s]) : '')),
      },
      { size: 60 },
    ],
    series: [
      { label: 'x' },
      ...series.map((s, i) => {
        const color = PALETTE[i % PALETTE.length] as string;
        const paths = kind === 'bar' ? barsOf(i) : undefined;
        return {
          label: s.name,
          stroke: color,
          width: kind === 'bar' ? 1 : 2,
          ...(kind === 'bar' ? { fill: `${color}cc`, points: { show: false } } : { points: { show: true, size: 6 } }),
          ...(paths ? { paths } : {}),
        };
      }),
    ],
  };
  return new uPlot(opts, [xs, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
}
