/**
 * What the embedding surfaces need to know about a workspace table: that it exists, its columns and their types,
 * and how to name it in SQL run by the service itself (never by users — their SQL goes through the rewriter).
 */
import { type Db, sql } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { isLogicalName, physicalName } from '@wds/sql-rewriter';

const TEXT_TYPES = new Set(['text', 'character varying', 'character', 'citext']);
/** Suffix of the column that holds a text column's embedding. */
export const EMBEDDING_SUFFIX = '_embedding';

export interface TableInfo {
  logical: string;
  /** `user_data."ws_…_name"`, quoted. */
  qualified: string;
  /** Column name → type as format_type prints it (`text`, `real[]`, `vector(512)`, …). */
  columns: Map<string, string>;
  hasDeletedAt: boolean;
}

export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** The table, or 400 naming what is wrong (bad name, no such table, no `id` column). */
export async function loadTable(db: Db, workspaceId: string, table: string): Promise<TableInfo> {
  if (typeof table !== 'string' || !isLogicalName(table)) {
    throw new ServiceError('INVALID_TABLE', `Invalid table name: ${JSON.stringify(table)}`, 'lower-case letters, digits and _, at most 23 characters');
  }
  const physical = physicalName(workspaceId, table);
  // Only a plain table of built-in column types: the service reads it with its own rights, and a view, or a cast or
  // output function of a type some workspace defined, could run anything as the reader.
  const { rows } = await sql<{ name: string; type: string; builtin: boolean }>`
    SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
           (t.typnamespace = 'pg_catalog'::regnamespace
            OR t.typnamespace = (SELECT e.extnamespace FROM pg_catalog.pg_extension e WHERE e.extname = 'vector')) AS builtin
      FROM pg_catalog.pg_attribute a
      JOIN pg_catalog.pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p')
      JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
     WHERE a.attrelid = to_regclass(${`user_data.${quoteIdent(physical)}`}) AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum`.execute(db);
  if (rows.length === 0) throw new ServiceError('BAD_REQUEST', `Table ${table} does not exist`);
  const foreign = rows.find((r) => !r.builtin);
  if (foreign) throw new ServiceError('BAD_REQUEST', `Column ${foreign.name} of ${table} has a type this service does not read (${foreign.type})`);
  const columns = new Map(rows.map((r) => [r.name, r.type]));
  if (!columns.has('id')) throw new ServiceError('BAD_REQUEST', `Table ${table} has no id column`, 'embeddings identify rows by id');
  return { logical: table, qualified: `user_data.${quoteIdent(physical)}`, columns, hasDeletedAt: columns.has('deleted_at') };
}

export const isTextType = (type: string | undefined): boolean => type !== undefined && TEXT_TYPES.has(type.replace(/\(\d+\)$/, ''));

export const isEmbeddingType = (type: string | undefined): boolean => type === 'real[]' || (type?.startsWith('vector') ?? false);

/** Columns a row's JSON leaves out: the vectors of column embeddings (noise to a model, and large). */
export function embeddingColumns(info: TableInfo): string[] {
  return [...info.columns].filter(([name, type]) => name.endsWith(EMBEDDING_SUFFIX) && isEmbeddingType(type)).map(([n]) => n);
}

/** `AND t.deleted_at IS NULL` when the table soft-deletes. */
export const liveOnly = (info: TableInfo, alias = 't'): string => (info.hasDeletedAt ? ` AND ${alias}.deleted_at IS NULL` : '');

/**
 * Runs `read` in a transaction that first locks the table (ACCESS SHARE: it can no longer be dropped, renamed or
 * replaced, say by a view) and then checks it again, so nothing can be swapped in between the check and the read.
 * The service reads workspace tables with its own rights; this is what keeps those reads to plain tables.
 */
export async function withTable<T>(db: Db, workspaceId: string, table: string, read: (trx: Db, info: TableInfo) => Promise<T>): Promise<T> {
  const qualified = `user_data.${quoteIdent(physicalName(workspaceId, table))}`;
  return db.transaction().execute(async (trx) => {
    try {
      await sql.raw(`LOCK TABLE ${qualified} IN ACCESS SHARE MODE`).execute(trx);
    } catch (err) {
      if ((err as { code?: string }).code === '42P01') throw new ServiceError('BAD_REQUEST', `Table ${table} does not exist`);
      throw err;
    }
    return read(trx, await loadTable(trx, workspaceId, table));
  });
}
