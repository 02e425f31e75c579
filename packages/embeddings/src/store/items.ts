/**
 * The life of an embedding item: pending → processing → completed | failed | skipped, and back to pending when
 * its content changes. Chunks are replaced only by `completeItem` and removed by `skipItem` or `deleteItems`; until
 * then the last completed chunks stay searchable (a re-embedding or a failed retry does not hide an item).
 */
import {
  type Database,
  type Db,
  type EmbeddingItemRow,
  type EmbeddingItemsTable,
  type EmbeddingStatus,
  type EmbeddingSurface,
  isUuid,
  newId,
  sql,
} from '@wds/db';
import { ServiceError } from '@wds/errors';
import type { Insertable, RawBuilder, UpdateQueryBuilder } from 'kysely';
import { batches } from '../batches.js';
import { l2Normalise, toRealArrayLiteral, toVectorLiteral } from '../vector.js';
import { vectorColumnDimensions } from './pgvector.js';

export type EmbeddingTarget =
  | { surface: 'file'; fileId: string }
  | { surface: 'table_row'; tableName: string; rowId: string }
  | { surface: 'column'; tableName: string; columnName: string; rowId: string };

export type PendingItem = EmbeddingTarget & { workspaceId: string };

/**
 * An item to finish: its id, or the row `claimItem` returned. With the claimed row the update applies only if that
 * claim is still current (the item was not reset or claimed again since; `attempts` is the fencing token). With a
 * bare id it applies to a pending or processing item, e.g. one embedded synchronously right after `upsertPending`.
 */
export type ItemRef = string | Pick<EmbeddingItemRow, 'id' | 'attempts'>;

export interface CompletedEmbedding {
  model: string;
  dimensions: number;
  /** A hash of the embedded text, to recognise unchanged content later; null if not tracked. */
  contentHash: string | null;
  chunks: { content: string; embedding: number[] }[];
}

/** `file id`, `table:row` or `table.column:row`. Table and column names cannot hold ':' or '.', so keys are unique. */
export function targetKey(target: EmbeddingTarget): string {
  switch (target.surface) {
    case 'file':
      return target.fileId;
    case 'table_row':
      return `${target.tableName}:${target.rowId}`;
    case 'column':
      return `${target.tableName}.${target.columnName}:${target.rowId}`;
  }
}

/**
 * Inserts the items as pending, or resets existing ones to pending (clearing error and times; their chunks stay
 * until replaced). Returns the item ids in the order of `items`. A processing item that is reset cannot be completed
 * by the claim that was running, so content that changed mid-embedding is embedded again.
 */
export async function upsertPending(db: Db, items: PendingItem[]): Promise<string[]> {
  const key = (workspaceId: string, surface: string, target: string) => `${workspaceId}\n${surface}\n${target}`;
  const rows = new Map<string, Insertable<EmbeddingItemsTable>>();
  for (const item of items) {
    const target = targetKey(item);
    const k = key(item.workspaceId, item.surface, target);
    if (rows.has(k)) continue; // ON CONFLICT DO UPDATE cannot touch one row twice in a statement
    rows.set(k, {
      id: newId(),
      workspace_id: item.workspaceId,
      surface: item.surface,
      file_id: item.surface === 'file' ? item.fileId : null,
      table_name: item.surface === 'file' ? null : item.tableName,
      row_id: item.surface === 'file' ? null : item.rowId,
      column_name: item.surface === 'column' ? item.columnName : null,
      target_key: target,
    });
  }
  const ids = new Map<string, string>();
  for (const batch of batches([...rows.values()], 1000)) {
    const returned = await db
      .insertInto('platform.embedding_items')
      .values(batch)
      .onConflict((oc) =>
        oc.columns(['workspace_id', 'surface', 'target_key']).doUpdateSet({
          status: 'pending',
          error: null,
          started_at: null,
          completed_at: null,
          updated_at: sql`now()`,
        }),
      )
      .returning(['id', 'workspace_id', 'surface', 'target_key'])
      .execute();
    for (const r of returned) ids.set(key(r.workspace_id, r.surface, r.target_key), r.id);
  }
  return items.map((item) => ids.get(key(item.workspaceId, item.surface, targetKey(item)))!);
}

/**
 * Moves a pending item to processing (attempts + 1, started_at = now) and returns it; null when the item is not
 * pending (already claimed, finished, or gone). Concurrent claims of one item: exactly one wins.
 */
export async function claimItem(db: Db, id: string): Promise<EmbeddingItemRow | null> {
  if (!isUuid(id)) return null;
  const row = await db
    .updateTable('platform.embedding_items')
    .set({ status: 'processing', attempts: sql`attempts + 1`, started_at: sql`now()`, updated_at: sql`now()`, error: null })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
  return row ?? null;
}

/**
 * Stores the chunks of an item and marks it completed, in one transaction (the old chunks are replaced).
 * With `useVector` the pgvector column is written too when it exists with the same dimensions (see
 * `ensureVectorIndex`). Returns false, writing nothing, when `ref` no longer applies (see `ItemRef`).
 */
export async function completeItem(
  db: Db,
  ref: ItemRef,
  result: CompletedEmbedding,
  options: { useVector: boolean },
): Promise<boolean> {
  const { model, dimensions, contentHash } = result;
  const chunks = result.chunks.map((chunk, i) => {
    if (chunk.embedding.length !== dimensions || !chunk.embedding.every(Number.isFinite)) {
      throw new ServiceError(
        'INTERNAL_ERROR',
        `Chunk ${i} has ${chunk.embedding.length} values or non-finite ones, expected ${dimensions} finite numbers`,
      );
    }
    // PostgreSQL text cannot hold NUL; vectors are stored at unit length so that a dot product is the cosine.
    return { content: chunk.content.replaceAll('\u0000', ''), embedding: l2Normalise(chunk.embedding) };
  });
  return db.transaction().execute(async (trx) => {
    const item = await fence(
      trx
        .updateTable('platform.embedding_items')
        .set({
          status: 'completed',
          error: null,
          model,
          dimensions,
          content_hash: contentHash,
          completed_at: sql`now()`,
          updated_at: sql`now()`,
        }),
      ref,
    )
      .returning(['id', 'workspace_id'])
      .executeTakeFirst();
    if (!item) return false;
    await trx.deleteFrom('platform.embedding_chunks').where('item_id', '=', item.id).execute();
    const withVector = options.useVector && (await vectorColumnDimensions(trx)) === dimensions;
    let index = 0;
    for (const batch of batches(chunks, 100)) {
      const values = batch.map((chunk) => {
        const real = sql`${toRealArrayLiteral(chunk.embedding)}::real[]`;
        const vector = withVector ? sql`, ${toVectorLiteral(chunk.embedding)}::vector` : sql``;
        return sql`(${item.id}, ${index++}, ${item.workspace_id}, ${chunk.content}, ${real}${vector})`;
      });
      await sql`
        INSERT INTO platform.embedding_chunks (item_id, chunk_index, workspace_id, content, embedding${withVector ? sql`, embedding_v` : sql``})
        VALUES ${sql.join(values)}`.execute(trx);
    }
    return true;
  });
}

/** Marks the item failed with `message`; its last completed chunks stay searchable. False when `ref` no longer applies. */
export async function failItem(db: Db, ref: ItemRef, message: string): Promise<boolean> {
  const result = await fence(
    db.updateTable('platform.embedding_items').set({ status: 'failed', error: clip(message), updated_at: sql`now()` }),
    ref,
  ).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Marks the item skipped (nothing to embed, e.g. an image) with `reason`, and removes its chunks. */
export async function skipItem(db: Db, ref: ItemRef, reason: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const item = await fence(
      trx.updateTable('platform.embedding_items').set({ status: 'skipped', error: clip(reason), updated_at: sql`now()` }),
      ref,
    )
      .returning('id')
      .executeTakeFirst();
    if (!item) return false;
    await trx.deleteFrom('platform.embedding_chunks').where('item_id', '=', item.id).execute();
    return true;
  });
}

/**
 * Fails every item that has been processing for longer than `olderThanMs` (a worker that died or hangs), with the
 * error 'timed out after …'. Returns how many. The database clock decides, so workers' clocks do not matter.
 */
export async function reportStuck(db: Db, options: { olderThanMs: number }): Promise<number> {
  const ms = Math.max(0, Math.floor(options.olderThanMs));
  const result = await db
    .updateTable('platform.embedding_items')
    .set({ status: 'failed', error: `timed out after ${formatDuration(ms)}`, updated_at: sql`now()` })
    .where('status', '=', 'processing')
    .where('started_at', '<', sql<Date>`now() - ${ms} * interval '1 millisecond'`)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export interface ItemFilter {
  /** Only these files (surface 'file'). */
  fileIds?: string[];
  tableName?: string;
  columnName?: string;
  targetKeys?: string[];
}

/** The items of one workspace and surface matching `filter` are deleted with their chunks; returns how many. */
export async function deleteItems(db: Db, workspaceId: string, surface: EmbeddingSurface, filter: ItemFilter = {}): Promise<number> {
  const result = await db
    .deleteFrom('platform.embedding_items')
    .where('workspace_id', '=', workspaceId)
    .where('surface', '=', surface)
    .where(matching(filter))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** An item as `itemStatus` lists it; times are ISO strings. */
export interface EmbeddingItemView {
  id: string;
  surface: EmbeddingSurface;
  target_key: string;
  file_id: string | null;
  table_name: string | null;
  row_id: string | null;
  column_name: string | null;
  status: EmbeddingStatus;
  error: string | null;
  model: string | null;
  dimensions: number | null;
  attempts: number;
  chunk_count: number;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  completed_at: string | null;
}

export type StatusCounts = Record<EmbeddingStatus, number> & { total: number };

export interface EmbeddingStatusSummary {
  /** Over every item matching the filter, whatever the page. */
  counts: StatusCounts;
  /** One page of the matching items, oldest first. */
  items: EmbeddingItemView[];
}

/** Counts per status and one page (default 100, at most 1000) of the items of a workspace and surface. */
export async function itemStatus(
  db: Db,
  workspaceId: string,
  surface: EmbeddingSurface,
  filter: ItemFilter & { limit?: number; offset?: number } = {},
): Promise<EmbeddingStatusSummary> {
  const scoped = () =>
    db
      .selectFrom('platform.embedding_items as i')
      .where('i.workspace_id', '=', workspaceId)
      .where('i.surface', '=', surface)
      .where(matching(filter));
  const [grouped, rows] = await Promise.all([
    scoped().select(['i.status', sql<number>`count(*)::int`.as('n')]).groupBy('i.status').execute(),
    scoped()
      .selectAll('i')
      .select(
        sql<number>`(SELECT count(*)::int FROM platform.embedding_chunks c WHERE c.item_id = i.id)`.as('chunk_count'),
      )
      .orderBy('i.id')
      .limit(Math.min(Math.max(filter.limit ?? 100, 1), 1000))
      .offset(Math.max(filter.offset ?? 0, 0))
      .execute(),
  ]);
  const counts: StatusCounts = { pending: 0, processing: 0, completed: 0, failed: 0, skipped: 0, total: 0 };
  for (const g of grouped) {
    counts[g.status] = g.n;
    counts.total += g.n;
  }
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    counts,
    items: rows.map((r) => ({
      id: r.id,
      surface: r.surface,
      target_key: r.target_key,
      file_id: r.file_id,
      table_name: r.table_name,
      row_id: r.row_id,
      column_name: r.column_name,
      status: r.status,
      error: r.error,
      model: r.model,
      dimensions: r.dimensions,
      attempts: r.attempts,
      chunk_count: r.chunk_count,
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
      started_at: iso(r.started_at),
      completed_at: iso(r.completed_at),
    })),
  };
}

/** The filter as one condition on the items table; an empty list matches nothing. */
function matching(filter: ItemFilter): RawBuilder<boolean> {
  const conditions = [sql`true`];
  if (filter.fileIds) conditions.push(sql`file_id = ANY(${filter.fileIds.filter(isUuid)}::uuid[])`);
  if (filter.tableName !== undefined) conditions.push(sql`table_name = ${filter.tableName}`);
  if (filter.columnName !== undefined) conditions.push(sql`column_name = ${filter.columnName}`);
  if (filter.targetKeys) conditions.push(sql`target_key = ANY(${filter.targetKeys}::text[])`);
  return sql<boolean>`(${sql.join(conditions, sql` AND `)})`;
}

function fence<Q extends UpdateQueryBuilder<Database, 'platform.embedding_items', 'platform.embedding_items', object>>(
  query: Q,
  ref: ItemRef,
): Q {
  if (typeof ref === 'string') {
    if (!isUuid(ref)) return query.where(sql<boolean>`false`) as Q;
    return query.where('id', '=', ref).where('status', 'in', ['pending', 'processing']) as Q;
  }
  return query.where('id', '=', ref.id).where('status', '=', 'processing').where('attempts', '=', ref.attempts) as Q;
}

const clip = (text: string) => (text.length > 2000 ? `${text.slice(0, 1999)}…` : text).replaceAll('\u0000', '');

function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 100) / 10} s`;
  return `${Math.round(ms / 6000) / 10} min`;
}
