/**
 * The table-row surface (spec §4.8, asynchronous): every live row of an enrolled table is embedded as its JSON
 * (without timestamps and without column-embedding vectors). `embedTables` brings the items in line with the rows
 * (new or changed rows → pending, vanished rows → removed) and queues a job per table; the job does the same and
 * then embeds the pending rows in batches. Row changes with `auto_embed_tables` queue the same job.
 */
import { type Db, sql } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { chunkText, completeItem, jsonToText, reportStuck, searchChunks } from '@wds/embeddings';
import type { SqlCaller, SqlLimits, WorkspaceSql } from '@wds/workspace-sql';
import type { SearchEmbedder } from './embedder.js';
import type { Enqueue } from './jobs.js';
import type { StatusCounts } from './status.js';
import { embeddingColumns, liveOnly, loadTable, type TableInfo, withTable } from './tables.js';
import { visibleTop } from './visible.js';

const BATCH = 64;
const LEFT_OUT = ['created_at', 'updated_at', 'deleted_at'];

export interface RowDeps {
  db: Db;
  sql: WorkspaceSql;
  limits: SqlLimits;
  embedder: SearchEmbedder;
  pgvector: boolean;
  enqueue: Enqueue;
  stuckAfterMs: number;
}

/** A row as it is embedded, as SQL: its JSON without timestamps and vectors (hashed as text to spot changes). */
function rowJson(info: TableInfo, alias = 't'): string {
  const drop = [...LEFT_OUT, ...embeddingColumns(info)].map((c) => ` - '${c.replaceAll("'", "''")}'`).join('');
  return `(to_jsonb(${alias})${drop})`;
}
const rowText = (info: TableInfo, alias = 't'): string => `${rowJson(info, alias)}::text`;

const targetKey = (table: string) => `'${table}:' || t.id::text`;

/** New or changed rows → pending (all rows with `force`); items of rows gone or soft-deleted → removed. */
function reconcile(db: Db, workspaceId: string, table: string, force: boolean): Promise<void> {
  return withTable(db, workspaceId, table, (trx, info) => reconcileLocked(trx, workspaceId, info, force));
}

async function reconcileLocked(db: Db, workspaceId: string, info: TableInfo, force: boolean): Promise<void> {
  const text = rowText(info);
  await sql`
    INSERT INTO platform.embedding_items (id, workspace_id, surface, table_name, row_id, target_key, status, updated_at)
    SELECT gen_random_uuid(), ${workspaceId}, 'table_row', ${info.logical}, t.id::text, ${sql.raw(targetKey(info.logical))}, 'pending', now()
      FROM ${sql.raw(info.qualified)} t
      LEFT JOIN platform.embedding_items i
        ON i.workspace_id = ${workspaceId} AND i.surface = 'table_row' AND i.target_key = ${sql.raw(targetKey(info.logical))}
     WHERE TRUE${sql.raw(liveOnly(info))}
       AND (${force} OR i.id IS NULL OR (i.status NOT IN ('pending', 'processing') AND i.content_hash IS DISTINCT FROM md5(${sql.raw(text)})))
    ON CONFLICT (workspace_id, surface, target_key) DO UPDATE
      SET status = 'pending', error = NULL, updated_at = now()
      WHERE ${force} OR platform.embedding_items.status <> 'processing'`.execute(db);
  await sql`
    DELETE FROM platform.embedding_items i
     WHERE i.workspace_id = ${workspaceId} AND i.surface = 'table_row' AND i.table_name = ${info.logical}
       AND NOT EXISTS (SELECT 1 FROM ${sql.raw(info.qualified)} t WHERE t.id::text = i.row_id${sql.raw(liveOnly(info))})`.execute(db);
}

export async function embedTables(deps: RowDeps, workspaceId: string, tables: string[], force: boolean): Promise<{ tables: TableEmbedding[] }> {
  deps.embedder.require();
  const infos: TableInfo[] = [];
  for (const t of [...new Set(tables)]) infos.push(await loadTable(deps.db, workspaceId, t));
  for (const info of infos) {
    await reconcile(deps.db, workspaceId, info.logical, force);
    await deps.enqueue({ kind: 'table', workspaceId, table: info.logical });
  }
  const status = await tableStatus(deps, workspaceId);
  return { tables: status.tables.filter((s) => infos.some((i) => i.logical === s.table_name)) };
}

/** One job: reconcile the table's items with its rows, then embed its pending rows in batches. */
export async function runTableJob(deps: RowDeps, workspaceId: string, table: string, retry = false): Promise<void> {
  let info: TableInfo;
  try {
    info = await loadTable(deps.db, workspaceId, table);
  } catch (err) {
    // The table was dropped: its rows' vectors go with it.
    if (err instanceof ServiceError && err.status === 400) {
      await sql`DELETE FROM platform.embedding_items WHERE workspace_id = ${workspaceId} AND surface = 'table_row' AND table_name = ${table}`.execute(deps.db);
      return;
    }
    throw err;
  }
  const embedder = deps.embedder.require();
  if (retry) {
    // Rows the failed or crashed attempt had claimed are ours now.
    await sql`UPDATE platform.embedding_items SET status = 'pending', updated_at = now()
               WHERE workspace_id = ${workspaceId} AND surface = 'table_row' AND table_name = ${table}
                 AND status IN ('processing', 'failed')`.execute(deps.db);
  }
  await reconcile(deps.db, workspaceId, table, false);
  const text = rowText(info);
  for (;;) {
    const claimed = await sql<{ id: string; row_id: string }>`
      UPDATE platform.embedding_items SET status = 'processing', attempts = attempts + 1, started_at = now(), updated_at = now()
       WHERE id IN (SELECT id FROM platform.embedding_items
                     WHERE workspace_id = ${workspaceId} AND surface = 'table_row' AND table_name = ${table} AND status = 'pending'
                     ORDER BY row_id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING id, row_id`.execute(deps.db);
    if (claimed.rows.length === 0) {
      // Rows changed while this job ran (their own job was not queued while this one was) are caught here.
      await reconcile(deps.db, workspaceId, table, false);
      const more = await sql<{ n: string }>`SELECT count(*) AS n FROM platform.embedding_items
        WHERE workspace_id = ${workspaceId} AND surface = 'table_row' AND table_name = ${table} AND status = 'pending'`.execute(deps.db);
      if (Number(more.rows[0]?.n ?? 0) === 0) return;
      continue;
    }
    const rows = await withTable(deps.db, workspaceId, table, (trx) =>
      sql<{ id: string; doc: Record<string, unknown>; hash: string }>`
      SELECT t.id::text AS id, ${sql.raw(rowJson(info))} AS doc, md5(${sql.raw(text)}) AS hash
        FROM ${sql.raw(info.qualified)} t
       WHERE t.id::text = ANY(${claimed.rows.map((r) => r.row_id)}::text[])${sql.raw(liveOnly(info))}`.execute(trx),
    );
    const byRow = new Map(rows.rows.map((r) => [r.id, r]));
    const work = claimed.rows.map((c) => ({ item: c.id, row: byRow.get(c.row_id), chunks: [] as string[] }));
    // "name: Ada\ntags: x, y" reads better to a model than JSON punctuation.
    for (const w of work) if (w.row) w.chunks = chunkText(jsonToText(w.row.doc)).map((c) => c.content);
    const vectors = await deps.embedder.embedAll(work.flatMap((w) => w.chunks));
    let next = 0;
    for (const w of work) {
      if (!w.row || w.chunks.length === 0) {
        await sql`DELETE FROM platform.embedding_items WHERE id = ${w.item}`.execute(deps.db);
        continue;
      }
      const chunks = w.chunks.map((content) => ({ content, embedding: vectors[next++] as number[] }));
      await completeItem(
        deps.db,
        w.item,
        { model: embedder.model, dimensions: embedder.dimensions, contentHash: w.row.hash, chunks },
        { useVector: deps.pgvector },
      );
    }
  }
}

export interface TableEmbedding {
  table_name: string;
  /** Live rows of the table. */
  total_rows: number;
  embedded_rows: number;
  pending_rows: number;
  failed_rows: number;
  status: 'pending' | 'processing' | 'completed' | 'failed';
}

interface ItemCounts {
  table_name: string;
  pending: number;
  processing: number;
  completed: number;
  failed: number;
}

/** Items per table and state (after reporting stuck ones failed): what status and search both start from. */
async function itemCounts(deps: Pick<RowDeps, 'db' | 'stuckAfterMs'>, workspaceId: string): Promise<ItemCounts[]> {
  await reportStuck(deps.db, { olderThanMs: deps.stuckAfterMs });
  const { rows } = await sql<{ table_name: string; pending: string; processing: string; completed: string; failed: string }>`
    SELECT table_name,
           count(*) FILTER (WHERE status = 'pending') AS pending,
           count(*) FILTER (WHERE status = 'processing') AS processing,
           count(*) FILTER (WHERE status = 'completed') AS completed,
           count(*) FILTER (WHERE status = 'failed') AS failed
      FROM platform.embedding_items
     WHERE workspace_id = ${workspaceId} AND surface = 'table_row'
     GROUP BY table_name ORDER BY table_name`.execute(deps.db);
  return rows.map((r) => ({
    table_name: r.table_name,
    pending: Number(r.pending),
    processing: Number(r.processing),
    completed: Number(r.completed),
    failed: Number(r.failed),
  }));
}

export async function tableStatus(deps: Pick<RowDeps, 'db' | 'stuckAfterMs'>, workspaceId: string): Promise<{ tables: TableEmbedding[] }> {
  const tables: TableEmbedding[] = [];
  for (const r of await itemCounts(deps, workspaceId)) {
    let total = 0;
    try {
      const c = await withTable(deps.db, workspaceId, r.table_name, (trx, info) =>
        sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.raw(info.qualified)} t WHERE TRUE${sql.raw(liveOnly(info))}`.execute(trx),
      );
      total = Number(c.rows[0]?.n ?? 0);
    } catch {
      // dropped since: its items are removed by its next job
    }
    const { pending, processing, failed } = r;
    const status = processing > 0 ? 'processing' : pending > 0 ? 'pending' : failed > 0 ? 'failed' : 'completed';
    tables.push({ table_name: r.table_name, total_rows: total, embedded_rows: r.completed, pending_rows: pending + processing, failed_rows: failed, status });
  }
  return { tables };
}

export interface RowHit {
  table_name: string;
  score: number;
  row: Record<string, unknown>;
}

export async function searchTables(
  deps: RowDeps,
  caller: SqlCaller,
  query: string,
  limit: number,
  tableNames?: string[],
): Promise<{ results: RowHit[]; status: StatusCounts }> {
  const embedder = deps.embedder.require();
  // Item counts only: a search does not count the tables' rows as the status endpoint does.
  const counts = await itemCounts(deps, caller.workspaceId);
  const status: StatusCounts = { pending: 0, processing: 0, completed: 0, failed: 0, skipped: 0 };
  for (const t of counts) {
    status.completed += t.completed;
    status.pending += t.pending + t.processing;
    status.failed += t.failed;
  }
  if (status.completed === 0 && status.pending > 0) {
    throw new ServiceError(
      'CONFLICT',
      `No table rows are embedded yet (${status.pending} pending)`,
      'poll GET …/embeddings/tables/status until tables are completed',
    );
  }
  const [vector] = await embedder.embed([query]);
  const omit = new Map<string, string[]>();
  for (const t of counts) {
    try {
      const info = await loadTable(deps.db, caller.workspaceId, t.table_name);
      omit.set(t.table_name, embeddingColumns(info));
    } catch {
      // dropped
    }
  }
  const found = await visibleTop({
    sql: deps.sql,
    caller,
    limits: deps.limits,
    limit,
    omitColumns: (table) => omit.get(table) ?? [],
    fetch: async (k) => {
      const hits = await searchChunks(deps.db, {
        workspaceId: caller.workspaceId,
        surface: 'table_row',
        vector: Array.from(vector as number[]),
        limit: k,
        model: embedder.model,
        useVector: deps.pgvector,
        ...(tableNames ? { tableNames } : {}),
      });
      return hits.map((h) => ({ table: h.table_name as string, rowId: h.row_id as string, score: h.score }));
    },
  });
  return { results: found.map((f) => ({ table_name: f.table, score: f.score, row: f.row })), status };
}
