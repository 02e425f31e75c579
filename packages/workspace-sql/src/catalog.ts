import { ServiceError, validationError } from '@wds/errors';
import { analyze, isLogicalName } from '@wds/sql-rewriter';
import type { SqlAuditActor, SqlCaller, SqlLimits, WorkspaceSql } from './execute.js';

/**
 * Reads of the workspace's tables that change nothing, so an agent's host may run them without asking a person
 * (docs/mcp.md#read-tools). Each goes through `execute`, the one path of user SQL (analysed, rewritten, checked),
 * and reads the scoped information schema, which lists only the caller's workspace's tables, by logical name.
 */

export interface TableSummary {
  name: string;
  columns: string[];
}

export interface TableColumn {
  name: string;
  data_type: string;
  udt_name: string | null;
  nullable: boolean;
  default: string | null;
  max_length: number | null;
}

const rowsOf = async (sql: WorkspaceSql, caller: SqlCaller, text: string, limits: SqlLimits) =>
  ((await sql.execute(caller, text, limits)).rows ?? []) as Record<string, unknown>[];

/** One SELECT and nothing else, run as `execute` runs it; any other statement is refused before anything runs. */
export async function queryRead(sql: WorkspaceSql, caller: SqlCaller, text: string, limits: SqlLimits, audit: SqlAuditActor) {
  const a = analyze(text);
  if (a.kind !== 'select' || a.writes) {
    throw validationError(
      'query_sql runs SELECT statements only: use execute_sql for INSERT, UPDATE, DELETE and DDL (it may need approval)',
      `Not a read: a ${a.writes && a.kind === 'select' ? 'SELECT with a data-modifying part' : a.kind.toUpperCase()} statement`,
    );
  }
  const r = await sql.execute(caller, text, limits, audit);
  // The guard is the analysis above, before anything runs; this only keeps a mismatch of the two analyses from
  // answering as a read (it would be a bug in the rewriter, to report).
  if (r.kind !== 'select' || r.affected_rows !== undefined) throw new ServiceError('INTERNAL_ERROR', 'query_sql ran a statement that is not a read');
  return { rows: (r.rows ?? []) as Record<string, unknown>[], executed_sql: r.executed_sql };
}

/** The workspace's tables, each with its column names in order. */
export async function listTables(sql: WorkspaceSql, caller: SqlCaller, limits: SqlLimits): Promise<TableSummary[]> {
  const tables = await rowsOf(sql, caller, 'SELECT table_name FROM information_schema.tables ORDER BY table_name', limits);
  const columns = await rowsOf(sql, caller, 'SELECT table_name, column_name FROM information_schema.columns ORDER BY table_name, ordinal_position', limits);
  const byTable = new Map<string, string[]>(tables.map((t) => [String(t.table_name), []]));
  for (const c of columns) byTable.get(String(c.table_name))?.push(String(c.column_name));
  return [...byTable].map(([name, cols]) => ({ name, columns: cols }));
}

/** One table's columns in order; NOT_FOUND for a name that is no table of the workspace. */
export async function describeTable(sql: WorkspaceSql, caller: SqlCaller, table: string, limits: SqlLimits): Promise<{ name: string; columns: TableColumn[] }> {
  const missing = (name: string) => new ServiceError('NOT_FOUND', `No table ${name}`, 'list_tables names the tables');
  // A logical name is [a-z_][a-z0-9_]*: safe inside a string literal; anything else names no table.
  if (!isLogicalName(table)) throw missing(JSON.stringify(table.slice(0, 100)));
  const rows = await rowsOf(
    sql,
    caller,
    `SELECT column_name, data_type, udt_name, is_nullable, column_default, character_maximum_length FROM information_schema.columns WHERE table_name = '${table}' ORDER BY ordinal_position`,
    limits,
  );
  if (rows.length === 0) throw missing(table);
  return {
    name: table,
    columns: rows.map((r) => ({
      name: String(r.column_name),
      data_type: String(r.data_type),
      udt_name: r.udt_name === null ? null : String(r.udt_name),
      nullable: r.is_nullable === 'YES',
      default: r.column_default === null ? null : String(r.column_default),
      max_length: r.character_maximum_length === null ? null : Number(r.character_maximum_length),
    })),
  };
}
