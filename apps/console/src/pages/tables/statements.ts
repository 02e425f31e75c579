import { ok } from '@wds/client';
import { api } from '../../session.js';

/**
 * The SQL the Tables and Policies pages send: identifiers and literals written by the console itself, never a value
 * spliced in as text. An identifier is always double-quoted (a `"` doubled), a literal is a standard string (a `'`
 * doubled; the service's connections pin standard_conforming_strings = on, so a backslash is an ordinary character).
 */
export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;
export const literal = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/** A column of a workspace table, from the scoped information schema. */
export interface Column {
  name: string;
  type: string;
  nullable: boolean;
  hasDefault: boolean;
}

/** The workspace's tables, each with its columns in their order. */
export type Tables = Map<string, Column[]>;

export type Row = Record<string, unknown>;

export interface SqlAnswer {
  rows?: Row[];
  affected_rows?: number;
  executed_sql: string;
}

/** One statement through the workspace's SQL endpoint (`POST /api/v1/workspaces/{id}/sql`), under the caller's policies. */
export async function runSql(workspaceId: string, sql: string, extra: Record<string, unknown> = {}): Promise<SqlAnswer> {
  return (await ok(api.value.POST('/api/v1/workspaces/{id}/sql', { params: { path: { id: workspaceId } }, body: { sql, ...extra } as { sql: string } }))) as SqlAnswer;
}

export const TABLES_SQL =
  'SELECT t.table_name, c.column_name, c.data_type, c.is_nullable, c.column_default FROM information_schema.tables t LEFT JOIN information_schema.columns c ON c.table_name = t.table_name ORDER BY t.table_name, c.ordinal_position';

/** The workspace's tables and columns (the information schema the service scopes to this workspace). */
export async function loadTables(workspaceId: string): Promise<Tables> {
  const r = await runSql(workspaceId, TABLES_SQL);
  const tables: Tables = new Map();
  for (const row of r.rows ?? []) {
    const t = String(row.table_name);
    const columns = tables.get(t) ?? [];
    if (row.column_name !== null && row.column_name !== undefined) {
      columns.push({ name: String(row.column_name), type: String(row.data_type), nullable: row.is_nullable === 'YES', hasDefault: row.column_default !== null });
    }
    tables.set(t, columns);
  }
  return tables;
}

/** The columns the service adds to every table it creates and keeps itself. */
export const SYSTEM_COLUMNS = new Set(['id', 'created_at', 'updated_at', 'deleted_at']);

export type FilterOp = '=' | '<>' | '<' | '<=' | '>' | '>=' | 'contains' | 'is null' | 'is not null';
export const FILTER_OPS: { op: FilterOp; label: string }[] = [
  { op: '=', label: 'equals' },
  { op: '<>', label: 'does not equal' },
  { op: '<', label: 'less than' },
  { op: '<=', label: 'at most' },
  { op: '>', label: 'greater than' },
  { op: '>=', label: 'at least' },
  { op: 'contains', label: 'contains' },
  { op: 'is null', label: 'is NULL' },
  { op: 'is not null', label: 'is not NULL' },
];

export interface Filter {
  column: string;
  op: FilterOp;
  value: string;
}

export interface Sort {
  column: string;
  descending: boolean;
}

/** A LIKE pattern that matches `value` anywhere, its own `%`, `_` and `\` escaped (LIKE's default escape is `\`). */
const containing = (value: string) => `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function condition(f: Filter): string {
  const c = ident(f.column);
  if (f.op === 'is null') return `${c} IS NULL`;
  if (f.op === 'is not null') return `${c} IS NOT NULL`;
  if (f.op === 'contains') return `${c}::text ILIKE ${literal(containing(f.value))}`;
  // An untyped literal: PostgreSQL reads it as the column's own type.
  return `${c} ${f.op} ${literal(f.value)}`;
}

/**
 * The grid's read: its filters AND-ed, its sort (then id, so pages are stable), one row more than a page (to know
 * whether there is a next one), from `offset`. Soft-deleted rows never come back: the service skips them in every read.
 */
export function gridSql(table: string, filters: Filter[], sort: Sort | null, limit: number, offset: number, hasId: boolean): string {
  const where = filters.length ? ` WHERE ${filters.map(condition).join(' AND ')}` : '';
  const order = [sort ? `${ident(sort.column)} ${sort.descending ? 'DESC' : 'ASC'}` : null, hasId && sort?.column !== 'id' ? 'id' : null].filter(Boolean);
  return `SELECT * FROM ${ident(table)}${where}${order.length ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT ${limit + 1} OFFSET ${offset}`;
}

/** Text typed into a cell as SQL: an untyped literal (PostgreSQL reads it as the column's type), or NULL. */
export const valueSql = (value: string | null): string => (value === null ? 'NULL' : literal(value));

export const updateSql = (table: string, column: string, value: string | null, id: unknown): string =>
  `UPDATE ${ident(table)} SET ${ident(column)} = ${valueSql(value)} WHERE id = ${literal(String(id))}`;

export const insertSql = (table: string, values: [string, string][]): string =>
  `INSERT INTO ${ident(table)} (${values.map(([c]) => ident(c)).join(', ')}) VALUES (${values.map(([, v]) => literal(v)).join(', ')})`;

export const COLUMN_TYPES = ['text', 'integer', 'bigint', 'numeric', 'boolean', 'uuid', 'timestamptz', 'date', 'jsonb'];

export const createTableSql = (table: string, columns: { name: string; type: string }[]): string =>
  `CREATE TABLE ${ident(table)} (${columns.map((c) => `${ident(c.name)} ${COLUMN_TYPES.includes(c.type) ? c.type : 'text'}`).join(', ')})`;
