/**
 * Search ranks candidates with the service's own queries, then reads the rows the caller may see through the
 * caller's SQL path — the rewriter with the caller's select policies and the soft-delete filter — so a search can
 * never show a row the same caller could not SELECT. Candidates the caller cannot see are dropped and the ranking
 * is widened until `limit` visible rows are found or the candidates run out.
 */
import { ServiceError } from '@wds/errors';
import type { SqlCaller, SqlLimits, WorkspaceSql } from '@wds/workspace-sql';

export interface Candidate {
  table: string;
  rowId: string;
  score: number;
}

export interface VisibleRow {
  table: string;
  row: Record<string, unknown>;
  score: number;
}

const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** The rows of `table` among `ids` that the caller may read, by id; {} when a policy denies the whole table. */
async function readAs(
  sql: WorkspaceSql,
  caller: SqlCaller,
  limits: SqlLimits,
  table: string,
  ids: string[],
  omit: string[],
): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < ids.length; i += limits.maxRows) {
    const part = ids.slice(i, i + limits.maxRows);
    try {
      const r = await sql.execute(caller, `SELECT * FROM ${table} WHERE id IN (${part.map(literal).join(', ')})`, limits);
      for (const row of r.rows ?? []) {
        for (const c of omit) delete row[c];
        out.set(String(row.id), row);
      }
    } catch (err) {
      // A table the caller may not read at all, or one dropped since it was embedded, contributes nothing.
      if (err instanceof ServiceError && (err.code === 'POLICY_DENIED' || err.code === 'EXECUTION_ERROR')) return out;
      throw err;
    }
  }
  return out;
}

/**
 * Walks ranked candidates (`fetch(k)` returns the best k, best first) and keeps the visible ones, widening k
 * (×4 each round) until `limit` rows are found or fewer than k candidates exist.
 */
export async function visibleTop(opts: {
  sql: WorkspaceSql;
  caller: SqlCaller;
  limits: SqlLimits;
  limit: number;
  fetch: (k: number) => Promise<Candidate[]>;
  omitColumns: (table: string) => string[];
}): Promise<VisibleRow[]> {
  const { limit } = opts;
  let k = Math.max(limit * 2, 20);
  const seen = new Map<string, boolean>();
  const rows = new Map<string, Record<string, unknown>>();
  for (;;) {
    const candidates = await opts.fetch(k);
    const unseen = new Map<string, string[]>();
    for (const c of candidates) {
      const key = `${c.table}\u0000${c.rowId}`;
      if (seen.has(key)) continue;
      const list = unseen.get(c.table) ?? [];
      list.push(c.rowId);
      unseen.set(c.table, list);
    }
    for (const [table, ids] of unseen) {
      const got = await readAs(opts.sql, opts.caller, opts.limits, table, ids, opts.omitColumns(table));
      for (const id of ids) {
        const key = `${table}\u0000${id}`;
        const row = got.get(id);
        seen.set(key, row !== undefined);
        if (row) rows.set(key, row);
      }
    }
    const visible: VisibleRow[] = [];
    for (const c of candidates) {
      const row = rows.get(`${c.table}\u0000${c.rowId}`);
      if (row) visible.push({ table: c.table, row, score: c.score });
      if (visible.length === limit) break;
    }
    if (visible.length >= limit || candidates.length < k) return visible;
    k *= 4;
  }
}
