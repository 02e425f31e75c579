/** A cell's value as text: null as "NULL", objects as JSON; never markup (Preact renders it as a text node). */
export const cellText = (v: unknown): string => (v === null || v === undefined ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** Rows as CSV (RFC 4180: every field quoted when it holds a comma, a quote or a line break). */
export function toCsv(columns: string[], rows: Record<string, unknown>[]): string {
  const field = (v: unknown) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [columns.map(field).join(','), ...rows.map((r) => columns.map((c) => field(r[c])).join(','))].join('\r\n');
}

/** A date and time in the reader's locale; the raw text when it is not one. */
export const when = (iso: string | null | undefined): string => {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
};
