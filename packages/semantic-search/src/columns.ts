/**
 * The column surface (synchronous; docs/embeddings.md#the-three-surfaces): `generate` adds `<column>_embedding` to the
 * table the first time (real[], or vector(n) with an HNSW index when pgvector is there) and embeds every live row whose
 * text has no vector yet or changed since it was embedded (the text's MD5 is kept per row in platform.embedding_items);
 * `status` counts; `search` ranks rows by similarity and returns those the caller may read.
 */
import { type Db, sql } from '@wds/db';
import { ServiceError } from '@wds/errors';
import type { SqlCaller, SqlLimits, WorkspaceSql } from '@wds/workspace-sql';
import type { SearchEmbedder } from './embedder.js';
import { EMBEDDING_SUFFIX, embeddingColumns, isEmbeddingType, isTextType, liveOnly, loadTable, quoteIdent, type TableInfo, withTable } from './tables.js';
import { similaritySql, vectorText } from './vectors.js';
import { visibleTop } from './visible.js';
import { callerView, countAs, pagesAs } from './caller-counts.js';

const BATCH = 64;
const MAX_IDENT = 63;

export interface ColumnDeps {
  db: Db;
  embedder: SearchEmbedder;
  /** Store column vectors as pgvector `vector(n)` (when the extension exists). */
  pgvector: boolean;
  /** Called after a column was added, so cached table catalogs are refreshed in every process. */
  schemaChanged: (workspaceId: string) => Promise<void>;
  /**
   * Runs statements that change a workspace table in one transaction as the workspace's own role
   * (`WorkspaceSql.writeAsWorkspace`): the service never writes a workspace table with its own rights.
   */
  writeAsWorkspace: (workspaceId: string, statements: { text: string; values?: unknown[] }[]) => Promise<void>;
}

function textColumn(info: TableInfo, column: string): { column: string; embedding: string } {
  const type = info.columns.get(column);
  if (type === undefined) throw new ServiceError('BAD_REQUEST', `Table ${info.logical} has no column ${column}`);
  if (!isTextType(type)) throw new ServiceError('BAD_REQUEST', `Column ${column} of ${info.logical} is ${type}, not text`, 'only text columns can be embedded');
  const embedding = `${column}${EMBEDDING_SUFFIX}`;
  if (embedding.length > MAX_IDENT) throw new ServiceError('BAD_REQUEST', `Column name ${column} is too long to add ${EMBEDDING_SUFFIX} to it`);
  return { column, embedding };
}

const targetPrefix = (table: string, column: string) => `${table}.${column}:`;

export async function generateColumn(
  deps: ColumnDeps,
  workspaceId: string,
  table: string,
  column: string,
  /** Called after each batch is written, with the rows embedded so far (progress notifications); must not throw. */
  onBatch?: (generated: number) => void,
): Promise<{ generated_count: number; column_added: boolean; embedding_column: string }> {
  const embedder = deps.embedder.require();
  const info = await loadTable(deps.db, workspaceId, table);
  const { embedding } = textColumn(info, column);
  const existing = info.columns.get(embedding);
  if (existing !== undefined && !isEmbeddingType(existing)) {
    throw new ServiceError('CONFLICT', `Column ${embedding} already exists and is ${existing}, not an embedding`, 'rename it to embed this column');
  }
  const dims = embedder.dimensions;
  let columnAdded = false;
  if (existing === undefined) {
    // The embedder is tried before the table changes, so a failing provider leaves the table as it was.
    const probe = await withTable(deps.db, workspaceId, table, (trx) =>
      sql<{ text: string }>`
      SELECT t.${sql.raw(quoteIdent(column))} AS text FROM ${sql.raw(info.qualified)} t
       WHERE t.${sql.raw(quoteIdent(column))} IS NOT NULL AND btrim(t.${sql.raw(quoteIdent(column))}) <> '' LIMIT 1`.execute(trx),
    );
    if (probe.rows[0]) await embedder.embed([probe.rows[0].text]);
    const type = deps.pgvector ? `vector(${dims})` : 'real[]';
    await deps.writeAsWorkspace(workspaceId, [
      { text: `ALTER TABLE ${info.qualified} ADD COLUMN IF NOT EXISTS ${quoteIdent(embedding)} ${type}` },
      ...(deps.pgvector
        ? [{ text: `CREATE INDEX IF NOT EXISTS ${quoteIdent(`${embedding}_hnsw_${workspaceId.slice(0, 8)}`)} ON ${info.qualified} USING hnsw (${quoteIdent(embedding)} vector_cosine_ops)` }]
        : []),
    ]);
    columnAdded = true;
    await deps.schemaChanged(workspaceId);
  }
  const pgvector = (existing ?? (deps.pgvector ? 'vector' : 'real[]')).startsWith('vector');
  const prefix = targetPrefix(table, column);
  const col = quoteIdent(column);
  const emb = quoteIdent(embedding);
  let generated = 0;
  // Rows are read in id order in batches; each batch is embedded and written before the next is read.
  let after: string | null = null;
  for (;;) {
    const { rows }: { rows: { id: string; text: string; hash: string }[] } = await withTable(deps.db, workspaceId, table, (trx) =>
      sql<{ id: string; text: string; hash: string }>`
      SELECT t.id::text AS id, t.${sql.raw(col)} AS text, md5(t.${sql.raw(col)}) AS hash
        FROM ${sql.raw(info.qualified)} t
        LEFT JOIN platform.embedding_items i
          ON i.workspace_id = ${workspaceId} AND i.surface = 'column' AND i.target_key = ${prefix} || t.id::text
       WHERE t.${sql.raw(col)} IS NOT NULL AND btrim(t.${sql.raw(col)}) <> ''${sql.raw(liveOnly(info))}
         AND (t.${sql.raw(emb)} IS NULL OR i.content_hash IS DISTINCT FROM md5(t.${sql.raw(col)}))
         AND (${after}::text IS NULL OR t.id::text > ${after})
       ORDER BY t.id::text
       LIMIT ${BATCH}`.execute(trx),
    );
    if (rows.length === 0) break;
    const vectors = await embedder.embed(rows.map((r) => r.text));
    // The vectors first (as the workspace), then their record: a record without its vector never exists, and
    // a vector without its record is only embedded again next time.
    await deps.writeAsWorkspace(workspaceId, [
      {
        text: `UPDATE ${info.qualified} t SET ${emb} = v.e::${pgvector ? 'vector' : 'real[]'}
                 FROM (SELECT unnest($1::text[]) AS id, unnest($2::text[]) AS e) v
                WHERE t.id::text = v.id`,
        values: [rows.map((r) => r.id), vectors.map((v) => vectorText(v, pgvector))],
      },
    ]);
    await deps.db.transaction().execute(async (trx) => {
      await sql`
        INSERT INTO platform.embedding_items
          (id, workspace_id, surface, table_name, row_id, column_name, target_key, status, content_hash, model, dimensions, completed_at, updated_at)
        SELECT gen_random_uuid(), ${workspaceId}, 'column', ${table}, r.id, ${column}, ${prefix} || r.id, 'completed', r.hash,
               ${embedder.model}, ${dims}, now(), now()
          FROM (SELECT unnest(${rows.map((r) => r.id)}::text[]) AS id, unnest(${rows.map((r) => r.hash)}::text[]) AS hash) r
        ON CONFLICT (workspace_id, surface, target_key) DO UPDATE
          SET status = 'completed', content_hash = excluded.content_hash, model = excluded.model,
              dimensions = excluded.dimensions, completed_at = now(), updated_at = now(), error = NULL`.execute(trx);
    });
    generated += rows.length;
    after = (rows[rows.length - 1] as { id: string }).id;
    onBatch?.(generated);
  }
  return { generated_count: generated, column_added: columnAdded, embedding_column: embedding };
}

export interface ColumnStatus {
  column_name: string;
  embedding_column: string;
  /** Live rows with text in the column. */
  total_rows: number;
  /** Of those, rows whose vector matches their current text. */
  embedded_rows: number;
  /** Rows without a vector or whose text changed since: what the next generate embeds. */
  pending_rows: number;
}

/**
 * The embedded columns of a table and their counts, as the caller may see them (caller-counts.ts): the whole table's
 * for those who may run DDL and for a select policy that admits every live row, else those of the rows their SELECT
 * returns (none when no policy lets them read the table).
 */
export async function columnStatus(
  deps: { db: Db; sql: Pick<WorkspaceSql, 'mayRunDdl' | 'readScope' | 'execute'>; limits: SqlLimits },
  caller: SqlCaller,
  table: string,
): Promise<{ table_name: string; columns: ColumnStatus[] }> {
  const whole = () => withTable(deps.db, caller.workspaceId, table, (trx, info) => countColumns(trx, caller.workspaceId, table, info));
  const view = await callerView(deps.sql, caller);
  if (view.ddl) return whole();
  const info = await loadTable(deps.db, caller.workspaceId, table); // its 400s before any policy is looked at
  const scope = await view.scope(table);
  if (scope === 'whole') return whole();
  const columns: ColumnStatus[] = [];
  for (const { column, embedding } of textEmbeddings(info)) {
    let total = 0;
    let embedded = 0;
    if (scope === 'filtered') {
      const col = quoteIdent(column);
      const hasText = `${col} IS NOT NULL AND btrim(${col}) <> ''`;
      total = await countAs(deps.sql, caller, deps.limits, table, hasText);
      // The caller's rows with a vector, and the hash of their text now, matched with what was embedded.
      await pagesAs(deps.sql, caller, deps.limits, table, { where: `${hasText} AND ${quoteIdent(embedding)} IS NOT NULL`, columns: `md5(${col}) AS hash` }, async (rows) => {
        const { rows: n } = await sql<{ n: string }>`
          SELECT count(*) AS n
            FROM unnest(${rows.map((r) => String(r.id))}::text[], ${rows.map((r) => String(r.hash))}::text[]) AS v(id, hash)
            JOIN platform.embedding_items i
              ON i.workspace_id = ${caller.workspaceId} AND i.surface = 'column' AND i.target_key = ${targetPrefix(table, column)} || v.id
             AND i.content_hash = v.hash`.execute(deps.db);
        embedded += Number(n[0]?.n ?? 0);
      });
    }
    columns.push({ column_name: column, embedding_column: embedding, total_rows: total, embedded_rows: embedded, pending_rows: total - embedded });
  }
  return { table_name: table, columns };
}

/** The text columns of a table that have an embedding column. */
function textEmbeddings(info: TableInfo): { column: string; embedding: string }[] {
  return embeddingColumns(info)
    .map((embedding) => ({ column: embedding.slice(0, -EMBEDDING_SUFFIX.length), embedding }))
    .filter(({ column }) => isTextType(info.columns.get(column)));
}

async function countColumns(db: Db, workspaceId: string, table: string, info: TableInfo): Promise<{ table_name: string; columns: ColumnStatus[] }> {
  const columns: ColumnStatus[] = [];
  for (const { column, embedding } of textEmbeddings(info)) {
    const col = quoteIdent(column);
    const { rows } = await sql<{ total: string; embedded: string }>`
      SELECT count(*) AS total,
             count(*) FILTER (WHERE t.${sql.raw(quoteIdent(embedding))} IS NOT NULL AND i.content_hash = md5(t.${sql.raw(col)})) AS embedded
        FROM ${sql.raw(info.qualified)} t
        LEFT JOIN platform.embedding_items i
          ON i.workspace_id = ${workspaceId} AND i.surface = 'column' AND i.target_key = ${targetPrefix(table, column)} || t.id::text
       WHERE t.${sql.raw(col)} IS NOT NULL AND btrim(t.${sql.raw(col)}) <> ''${sql.raw(liveOnly(info))}`.execute(db);
    const total = Number(rows[0]?.total ?? 0);
    const embedded = Number(rows[0]?.embedded ?? 0);
    columns.push({ column_name: column, embedding_column: embedding, total_rows: total, embedded_rows: embedded, pending_rows: total - embedded });
  }
  return { table_name: table, columns };
}

export interface SearchDeps {
  db: Db;
  embedder: SearchEmbedder;
  sql: WorkspaceSql;
  limits: SqlLimits;
}

export async function searchColumn(
  deps: SearchDeps,
  caller: SqlCaller,
  table: string,
  column: string,
  query: string,
  limit: number,
): Promise<{ results: { score: number; row: Record<string, unknown> }[] }> {
  const embedder = deps.embedder.require();
  const info = await loadTable(deps.db, caller.workspaceId, table);
  const { embedding } = textColumn(info, column);
  const type = info.columns.get(embedding);
  if (!isEmbeddingType(type)) {
    throw new ServiceError('CONFLICT', `Column ${column} of ${table} has no embeddings yet`, 'POST …/embeddings/generate with this table_name and column_name first');
  }
  // Nothing to rank for a caller no policy lets read the table: the answer (and its time) says nothing of its rows.
  if ((await deps.sql.readScope(caller, table)) === 'none') return { results: [] };
  const pgvector = (type as string).startsWith('vector');
  const [vector] = await embedder.embed([query]);
  // Numbers, commas and brackets only (vectorText), so the query vector is written into the SQL as a literal.
  const literal = `'${vectorText(vector as number[], pgvector)}'`;
  const emb = `t.${quoteIdent(embedding)}`;
  const score = similaritySql(emb, literal, pgvector);
  const omit = embeddingColumns(info);
  const found = await visibleTop({
    sql: deps.sql,
    caller,
    limits: deps.limits,
    limit,
    omitColumns: () => omit,
    fetch: async (k) => {
      const order = pgvector ? `${emb} <=> ${literal}::vector` : `${score} DESC NULLS LAST`;
      const r = await withTable(deps.db, caller.workspaceId, table, (trx) =>
        sql
          .raw<{ id: string; score: number }>(
            `SELECT t.id::text AS id, ${score}::float8 AS score FROM ${info.qualified} t WHERE ${emb} IS NOT NULL${liveOnly(info)} ORDER BY ${order} LIMIT ${Math.floor(k)}`,
          )
          .execute(trx),
      );
      return r.rows.map((row) => ({ table, rowId: row.id, score: row.score }));
    },
  });
  return { results: found.map((f) => ({ score: f.score, row: f.row })) };
}
