/**
 * The table-row surface (asynchronous; docs/embeddings.md#the-three-surfaces): every live row of an enrolled table is
 * embedded as its JSON (without timestamps and without column-embedding vectors). `embedTables` only records the
 * request per table (`platform.embedding_tables`: the status shows the table pending at once) and queues the table's
 * job; the job brings the items in line with the rows (new or changed rows → pending, all of them when a regeneration
 * was asked for, vanished rows → removed) and embeds the pending rows in batches, until no request is newer than its
 * last look at the rows. Row changes with `auto_embed_tables` queue the same job. A request whose job never came (the
 * queue dropped it while the previous job was finishing, or the process died in between) is queued again by
 * `requeueTableRequests`, on the maintenance schedule.
 */
import { type Db, sql } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { type ExactVectorIndex, chunkText, completeItem, jsonToText, reportStuck, searchChunks } from '@wds/embeddings';
import type { SqlCaller, SqlLimits, WorkspaceSql } from '@wds/workspace-sql';
import type { SearchEmbedder } from './embedder.js';
import type { Enqueue } from './jobs.js';
import type { StatusCounts } from './status.js';
import { embeddingColumns, liveOnly, loadTable, type TableInfo, withTable } from './tables.js';
import { visibleTop } from './visible.js';
import { callerView, countAs, pagesAs } from './caller-counts.js';

const BATCH = 64;
const LEFT_OUT = ['created_at', 'updated_at', 'deleted_at'];

export interface RowDeps {
  db: Db;
  sql: WorkspaceSql;
  limits: SqlLimits;
  embedder: SearchEmbedder;
  pgvector: boolean;
  /** Exact searches without pgvector run in process with it (see ExactVectorIndex); absent, PostgreSQL scans. */
  vectorIndex?: ExactVectorIndex;
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

/**
 * The job's look at the rows: new or changed rows → pending (all rows when the table's request asks for a
 * regeneration); items of rows gone or soft-deleted → removed. The request is then marked reconciled as of the
 * moment before the rows were read, so a request made meanwhile stays newer and is seen by the next look.
 */
function reconcile(db: Db, workspaceId: string, table: string): Promise<void> {
  return withTable(db, workspaceId, table, async (trx, info) => {
    const { rows } = await sql<{ force: boolean | null; at: Date }>`
      SELECT (SELECT force FROM platform.embedding_tables WHERE workspace_id = ${workspaceId} AND table_name = ${table} FOR UPDATE) AS force,
             clock_timestamp() AS at`.execute(trx);
    const { force, at } = rows[0] as { force: boolean | null; at: Date };
    await reconcileLocked(trx, workspaceId, info, force ?? false);
    await sql`
      INSERT INTO platform.embedding_tables AS e (workspace_id, table_name, requested_at, reconciled_at)
      VALUES (${workspaceId}, ${table}, ${at}, ${at})
      ON CONFLICT (workspace_id, table_name) DO UPDATE
        SET reconciled_at = ${at}, force = e.force AND e.requested_at > ${at}, failed_at = NULL, error = NULL`.execute(trx);
  });
}

/** Records an embed (or, with `force`, a regenerate) request of a table; a pending regeneration is never downgraded. */
async function recordRequest(db: Db, workspaceId: string, table: string, force: boolean): Promise<void> {
  await sql`
    INSERT INTO platform.embedding_tables AS e (workspace_id, table_name, requested_at, force)
    VALUES (${workspaceId}, ${table}, clock_timestamp(), ${force})
    ON CONFLICT (workspace_id, table_name) DO UPDATE
      SET requested_at = clock_timestamp(), force = e.force OR EXCLUDED.force, failed_at = NULL, error = NULL`.execute(db);
}

/**
 * The table's job failed for good (its `onFailed`): the rows it left pending or processing show failed, and so does
 * its request (if not yet reconciled), with the reason.
 */
export async function failTableJob(db: Db, workspaceId: string, table: string, message: string): Promise<void> {
  await db
    .updateTable('platform.embedding_items')
    .set({ status: 'failed', error: message, updated_at: sql`now()` })
    .where('workspace_id', '=', workspaceId)
    .where('surface', '=', 'table_row')
    .where('table_name', '=', table)
    .where('status', 'in', ['pending', 'processing'])
    .execute();
  await failTableRequest(db, workspaceId, table, message);
}

/** The table's job failed for good: its request (if not yet reconciled) shows failed, with the reason. */
export async function failTableRequest(db: Db, workspaceId: string, table: string, message: string): Promise<void> {
  await sql`UPDATE platform.embedding_tables SET failed_at = clock_timestamp(), error = ${message}
             WHERE workspace_id = ${workspaceId} AND table_name = ${table}`.execute(db);
}

/**
 * Queues the job of every table whose request is older than `olderThanMs` and still not reconciled nor failed (the
 * enqueue dedupes: a table whose job is queued or running gets no second one). Returns how many requests it found.
 */
export async function requeueTableRequests(db: Db, enqueue: Enqueue, opts: { olderThanMs: number }): Promise<number> {
  const { rows } = await sql<{ workspace_id: string; table_name: string }>`
    SELECT workspace_id, table_name FROM platform.embedding_tables
     WHERE requested_at > coalesce(reconciled_at, '-infinity') AND (failed_at IS NULL OR failed_at < requested_at)
       AND requested_at < now() - ${Math.max(0, Math.floor(opts.olderThanMs))} * interval '1 millisecond'`.execute(db);
  for (const r of rows) await enqueue({ kind: 'table', workspaceId: r.workspace_id, table: r.table_name });
  return rows.length;
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

/**
 * Accepts the tables for embedding (with `force`, for embedding again): checks them, records the requests and
 * queues a job per table, then answers their status (pending until the jobs are done). No row is read here.
 */
export async function embedTables(deps: RowDeps, workspaceId: string, tables: string[], force: boolean): Promise<{ tables: TableEmbedding[] }> {
  deps.embedder.require();
  const names = [...new Set(tables)];
  for (const t of names) await loadTable(deps.db, workspaceId, t); // every name checked before anything is recorded
  for (const t of names) {
    await recordRequest(deps.db, workspaceId, t, force);
    await deps.enqueue({ kind: 'table', workspaceId, table: t });
  }
  const status = await wholeStatus(deps, workspaceId);
  return { tables: status.tables.filter((s) => names.includes(s.table_name)) };
}

/**
 * One job: reconcile the table's items with its rows, then embed its pending rows in batches, until nothing is
 * pending and no request is newer. Stops between batches once `signal` aborts (its attempt was given up).
 */
export async function runTableJob(deps: RowDeps, workspaceId: string, table: string, retry = false, signal?: AbortSignal): Promise<void> {
  let info: TableInfo;
  try {
    info = await loadTable(deps.db, workspaceId, table);
  } catch (err) {
    // The table was dropped: its rows' vectors go with it.
    if (err instanceof ServiceError && err.status === 400) {
      await sql`DELETE FROM platform.embedding_items WHERE workspace_id = ${workspaceId} AND surface = 'table_row' AND table_name = ${table}`.execute(deps.db);
      await sql`DELETE FROM platform.embedding_tables WHERE workspace_id = ${workspaceId} AND table_name = ${table}`.execute(deps.db);
      return;
    }
    throw err;
  }
  const embedder = deps.embedder.require();
  // One job per table at a time (the queue's key): rows left processing are a dead job's, and ours now. A retry
  // also tries the rows its failed attempt gave up on.
  await sql`UPDATE platform.embedding_items SET status = 'pending', updated_at = now()
             WHERE workspace_id = ${workspaceId} AND surface = 'table_row' AND table_name = ${table}
               AND (status = 'processing' OR (${retry} AND status = 'failed'))`.execute(deps.db);
  await reconcile(deps.db, workspaceId, table);
  const text = rowText(info);
  for (;;) {
    signal?.throwIfAborted();
    const claimed = await sql<{ id: string; row_id: string }>`
      UPDATE platform.embedding_items SET status = 'processing', attempts = attempts + 1, started_at = now(), updated_at = now()
       WHERE id IN (SELECT id FROM platform.embedding_items
                     WHERE workspace_id = ${workspaceId} AND surface = 'table_row' AND table_name = ${table} AND status = 'pending'
                     ORDER BY row_id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING id, row_id`.execute(deps.db);
    if (claimed.rows.length === 0) {
      // Rows changed and requests made while this job ran (no second job was queued meanwhile) are caught here.
      await reconcile(deps.db, workspaceId, table);
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

interface TableCounts {
  table_name: string;
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  /** A request the job has not yet looked at (and that has not failed): the rows' items may not exist yet. */
  requested: boolean;
  /** …asking for a regeneration (every row pending). */
  force: boolean;
  /** The job of the last request failed before it looked at the rows. */
  requestFailed: boolean;
}

/**
 * Items per table and state (after reporting stuck ones failed), with the tables' requests: what status and search
 * both start from. A table appears once requested, before its job has made any item.
 */
async function tableCounts(deps: Pick<RowDeps, 'db' | 'stuckAfterMs'>, workspaceId: string): Promise<TableCounts[]> {
  await reportStuck(deps.db, { olderThanMs: deps.stuckAfterMs });
  const { rows } = await sql<{
    table_name: string;
    pending: string | null;
    processing: string | null;
    completed: string | null;
    failed: string | null;
    unreconciled: boolean | null;
    force: boolean | null;
    request_failed: boolean | null;
  }>`
    WITH items AS (
      SELECT table_name,
             count(*) FILTER (WHERE status = 'pending') AS pending,
             count(*) FILTER (WHERE status = 'processing') AS processing,
             count(*) FILTER (WHERE status = 'completed') AS completed,
             count(*) FILTER (WHERE status = 'failed') AS failed
        FROM platform.embedding_items
       WHERE workspace_id = ${workspaceId} AND surface = 'table_row'
       GROUP BY table_name
    ), requests AS (
      SELECT table_name, force,
             requested_at > coalesce(reconciled_at, '-infinity') AS unreconciled,
             failed_at IS NOT NULL AND failed_at >= requested_at AS request_failed
        FROM platform.embedding_tables
       WHERE workspace_id = ${workspaceId}
    )
    SELECT coalesce(i.table_name, r.table_name) AS table_name, i.pending, i.processing, i.completed, i.failed,
           r.unreconciled, r.force, r.request_failed
      FROM items i FULL JOIN requests r ON r.table_name = i.table_name
     ORDER BY 1`.execute(deps.db);
  return rows.map((r) => ({
    table_name: r.table_name,
    pending: Number(r.pending ?? 0),
    processing: Number(r.processing ?? 0),
    completed: Number(r.completed ?? 0),
    failed: Number(r.failed ?? 0),
    requested: !!r.unreconciled && !r.request_failed,
    force: !!r.force,
    requestFailed: !!r.unreconciled && !!r.request_failed,
  }));
}

/** Live rows of a workspace table; 0 once it was dropped (its items are removed by its next job). */
async function liveRows(db: Db, workspaceId: string, table: string): Promise<number> {
  try {
    const c = await withTable(db, workspaceId, table, (trx, info) =>
      sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.raw(info.qualified)} t WHERE TRUE${sql.raw(liveOnly(info))}`.execute(trx),
    );
    return Number(c.rows[0]?.n ?? 0);
  } catch {
    return 0;
  }
}

/** Rows still to embed: the items pending or processing, and while a request waits for its job, every row it covers. */
function pendingRows(t: TableCounts, total: number): number {
  const items = t.pending + t.processing;
  if (!t.requested) return items;
  return Math.max(items, t.force ? total : total - t.completed);
}

/** A table's status from its counts (`total`: its live rows, or the caller's view of them). */
function embeddingOf(t: TableCounts, total: number): TableEmbedding {
  const pending = pendingRows(t, total);
  const status = t.processing > 0 ? 'processing' : pending > 0 || t.requested ? 'pending' : t.failed > 0 || t.requestFailed ? 'failed' : 'completed';
  return { table_name: t.table_name, total_rows: total, embedded_rows: t.completed, pending_rows: pending, failed_rows: t.failed, status };
}

/**
 * The counts of `t` over the rows the caller's SELECT returns (caller-counts.ts): their items by state, and the
 * table's request only as far as it covers those rows (a pending request with nothing of theirs left to embed, or a
 * failed one with everything of theirs embedded, is not theirs to see). Undefined when they see no row of it, so a
 * table that only hidden rows were written to is not listed either.
 */
async function visibleCounts(deps: Pick<RowDeps, 'db' | 'sql' | 'limits'>, caller: SqlCaller, t: TableCounts): Promise<TableCounts & { total: number } | undefined> {
  const total = await countAs(deps.sql, caller, deps.limits, t.table_name);
  const seen: TableCounts & { total: number } = { ...t, pending: 0, processing: 0, completed: 0, failed: 0, total };
  await pagesAs(deps.sql, caller, deps.limits, t.table_name, {}, async (rows) => {
    const { rows: counts } = await sql<{ status: string; n: string }>`
      SELECT status, count(*) AS n FROM platform.embedding_items
       WHERE workspace_id = ${caller.workspaceId} AND surface = 'table_row'
         AND target_key = ANY(${rows.map((r) => `${t.table_name}:${String(r.id)}`)}::text[])
       GROUP BY status`.execute(deps.db);
    for (const c of counts) if (c.status === 'pending' || c.status === 'processing' || c.status === 'completed' || c.status === 'failed') seen[c.status] += Number(c.n);
  });
  if (total === 0 && seen.pending + seen.processing + seen.completed + seen.failed === 0) return undefined;
  const unembedded = total > seen.completed;
  seen.requested = t.requested && (t.force ? total > 0 : unembedded);
  seen.requestFailed = t.requestFailed && unembedded;
  return seen;
}

/**
 * Each embedded table's status as the caller may see it: whole-table counts for those who may run DDL and for a
 * select policy that admits every live row; otherwise the counts of the rows their SELECT returns, and only tables
 * they can read a row of (caller-counts.ts).
 */
export async function tableStatus(deps: Pick<RowDeps, 'db' | 'sql' | 'limits' | 'stuckAfterMs'>, caller: SqlCaller): Promise<{ tables: TableEmbedding[] }> {
  const view = await callerView(deps.sql, caller);
  const tables: TableEmbedding[] = [];
  for (const t of await tableCounts(deps, caller.workspaceId)) {
    const scope = await view.scope(t.table_name);
    if (scope === 'whole') {
      tables.push(embeddingOf(t, await liveRows(deps.db, caller.workspaceId, t.table_name)));
    } else if (scope === 'filtered') {
      const seen = await visibleCounts(deps, caller, t);
      if (seen) tables.push(embeddingOf(seen, seen.total));
    }
  }
  return { tables };
}

/** tableStatus of the whole tables, for the answers of embed and regenerate (DDL only). */
async function wholeStatus(deps: Pick<RowDeps, 'db' | 'stuckAfterMs'>, workspaceId: string): Promise<{ tables: TableEmbedding[] }> {
  const tables: TableEmbedding[] = [];
  for (const t of await tableCounts(deps, workspaceId)) tables.push(embeddingOf(t, await liveRows(deps.db, workspaceId, t.table_name)));
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
  // The counts are the caller's (tableStatus): the rows of a table they cannot read count for nothing.
  const { tables } = await tableStatus(deps, caller);
  const status: StatusCounts = { pending: 0, processing: 0, completed: 0, failed: 0, skipped: 0 };
  for (const t of tables) {
    status.completed += t.embedded_rows;
    status.pending += t.pending_rows;
    status.failed += t.failed_rows;
  }
  if (status.completed === 0 && status.pending > 0) {
    throw new ServiceError(
      'CONFLICT',
      `No table rows are embedded yet (${status.pending} pending)`,
      'poll GET …/embeddings/tables/status until tables are completed',
    );
  }
  // Candidates only from tables the caller may read a row of: how long a search takes must not depend on how many
  // rows of a table they cannot read are embedded.
  const readable: string[] = [];
  for (const { table_name: t } of tables) {
    if ((!tableNames || tableNames.includes(t)) && (await deps.sql.readScope(caller, t)) !== 'none') readable.push(t);
  }
  if (readable.length === 0) return { results: [], status };
  const [vector] = await embedder.embed([query]);
  const omit = new Map<string, string[]>();
  for (const t of readable) {
    try {
      const info = await loadTable(deps.db, caller.workspaceId, t);
      omit.set(t, embeddingColumns(info));
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
        index: deps.vectorIndex,
        tableNames: readable,
      });
      return hits.map((h) => ({ table: h.table_name as string, rowId: h.row_id as string, score: h.score }));
    },
  });
  return { results: found.map((f) => ({ table_name: f.table, score: f.score, row: f.row })), status };
}

