import { useSignal } from '@preact/signals';
import type { ComponentChildren } from 'preact';
import { cellText, toCsv } from './values.js';

/**
 * Rows in a table with paging (in the browser) and copy as CSV or JSON. Column names and values are text, never
 * markup; a long value wraps inside its cell.
 */
export function Grid({
  caption,
  columns,
  rows,
  pageSize = 50,
  actions,
  selected,
  onSelect,
}: {
  caption: string;
  columns: string[];
  rows: Record<string, unknown>[];
  pageSize?: number;
  /** Extra controls per row (the last column), e.g. "Explain" or "Edit". */
  actions?: (row: Record<string, unknown>, index: number) => ComponentChildren;
  selected?: number | null;
  onSelect?: (index: number) => void;
}) {
  const page = useSignal(0);
  const copied = useSignal('');
  const pages = Math.max(1, Math.ceil(rows.length / pageSize));
  const at = Math.min(page.value, pages - 1);
  const shown = rows.slice(at * pageSize, (at + 1) * pageSize);
  const copy = async (kind: 'CSV' | 'JSON') => {
    const text = kind === 'CSV' ? toCsv(columns, rows) : JSON.stringify(rows, null, 2);
    try {
      await navigator.clipboard.writeText(text);
      copied.value = `Copied ${rows.length} rows as ${kind}.`;
    } catch {
      copied.value = 'The browser did not allow copying.';
    }
  };
  return (
    <div class="grid">
      <div class="grid-tools">
        <button type="button" onClick={() => copy('CSV')}>
          Copy as CSV
        </button>
        <button type="button" onClick={() => copy('JSON')}>
          Copy as JSON
        </button>
        <span role="status">{copied.value}</span>
      </div>
      {/* A region of its own, reachable by Tab, so a keyboard can scroll a wide table (axe: scrollable-region-focusable). */}
      <div class="scroll" role="region" aria-label={caption} tabIndex={0}>
        <table>
          <caption>{caption}</caption>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col" key={c}>
                  {c}
                </th>
              ))}
              {actions && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {shown.map((r, i) => {
              const index = at * pageSize + i;
              return (
                <tr key={index} aria-selected={selected === undefined ? undefined : selected === index} onClick={onSelect ? () => onSelect(index) : undefined}>
                  {columns.map((c) => (
                    <td key={c} class={r[c] === null ? 'null' : 'cell'}>
                      {cellText(r[c])}
                    </td>
                  ))}
                  {actions && <td>{actions(r, index)}</td>}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {pages > 1 && (
        <nav class="pager" aria-label={`Pages of ${caption}`}>
          <button type="button" disabled={at === 0} onClick={() => (page.value = at - 1)}>
            Previous page
          </button>
          <span>
            Page {at + 1} of {pages} ({rows.length} rows)
          </span>
          <button type="button" disabled={at >= pages - 1} onClick={() => (page.value = at + 1)}>
            Next page
          </button>
        </nav>
      )}
    </div>
  );
}
