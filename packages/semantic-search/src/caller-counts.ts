/**
 * Counts of a workspace table's rows, as a caller may learn them. The whole table's counts (read with the service's
 * own connection) go only to those who may run DDL in the workspace — they enrol tables, add embedding columns and
 * are answered whole-table counts by those calls anyway — and to callers whose select policy admits every live row.
 * Anyone else is counted only the rows their own SELECT returns: the counting statements run through their SQL path
 * (the rewriter, their select policies, the soft-delete filter), and only the ids and hashes those return are
 * matched with the service's embedding records. So a status or search never tells a member how many rows they
 * cannot see, nor when such rows come and go.
 */
import { ServiceError } from '@wds/errors';
import type { ReadScope, SqlCaller, SqlLimits, WorkspaceSql } from '@wds/workspace-sql';

/** Whose rows a table's counts cover: `whole` (the table's), else the caller's view (none, or some rows). */
export type CountScope = 'whole' | Exclude<ReadScope, 'every'>;

export interface CallerView {
  /** The caller may run DDL: every table's counts are whole. */
  ddl: boolean;
  scope(table: string): Promise<CountScope>;
}

export async function callerView(sql: Pick<WorkspaceSql, 'mayRunDdl' | 'readScope'>, caller: SqlCaller): Promise<CallerView> {
  const ddl = await sql.mayRunDdl(caller);
  return {
    ddl,
    scope: async (table) => {
      if (ddl) return 'whole';
      const s = await sql.readScope(caller, table);
      return s === 'every' ? 'whole' : s;
    },
  };
}

const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** A statement as the caller; a table they may not read (or one dropped meanwhile) answers nothing. */
async function readAs(sql: Pick<WorkspaceSql, 'execute'>, caller: SqlCaller, limits: SqlLimits, text: string): Promise<Record<string, unknown>[]> {
  try {
    return (await sql.execute(caller, text, limits)).rows ?? [];
  } catch (err) {
    if (err instanceof ServiceError && (err.code === 'POLICY_DENIED' || err.code === 'EXECUTION_ERROR')) return [];
    throw err;
  }
}

/** How many rows of `table` matching `where` (SQL over its columns) the caller's SELECT returns. */
export async function countAs(sql: Pick<WorkspaceSql, 'execute'>, caller: SqlCaller, limits: SqlLimits, table: string, where = 'TRUE'): Promise<number> {
  const rows = await readAs(sql, caller, limits, `SELECT count(*) AS n FROM ${table} WHERE ${where}`);
  return Number(rows[0]?.n ?? 0);
}

/**
 * The rows of `table` matching `where` that the caller's SELECT returns, as `id::text` plus `columns` (select-list
 * SQL), in pages of at most `limits.maxRows` in id order: `each` gets every page.
 */
export async function pagesAs(
  sql: Pick<WorkspaceSql, 'execute'>,
  caller: SqlCaller,
  limits: SqlLimits,
  table: string,
  opts: { where?: string; columns?: string },
  each: (rows: Record<string, unknown>[]) => Promise<void>,
): Promise<void> {
  const page = Math.max(1, Math.floor(limits.maxRows));
  // ORDER BY and the keyset name t.id, the column: a bare `id` in ORDER BY would be the output's id::text.
  const select = `SELECT t.id::text AS id${opts.columns ? `, ${opts.columns}` : ''} FROM ${table} AS t`;
  let after: string | null = null;
  for (;;) {
    // Keyset on the id's own type and order (the literal takes the column's type), so each page is one index range.
    const keyset: string = after === null ? 't.id IS NOT NULL' : `t.id > ${literal(after)}`;
    const rows = await readAs(sql, caller, limits, `${select} WHERE ${keyset} AND (${opts.where ?? 'TRUE'}) ORDER BY t.id LIMIT ${page}`);
    if (rows.length > 0) await each(rows);
    if (rows.length < page) return;
    after = String((rows[rows.length - 1] as Record<string, unknown>).id);
  }
}
