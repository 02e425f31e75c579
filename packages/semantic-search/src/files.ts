/**
 * The file surface (asynchronous; docs/embeddings.md#the-three-surfaces): `embed` marks files pending and queues one
 * job per file; the job reads the blob, extracts its text, chunks it and stores a vector per chunk; `status` reports
 * every file's state (pending → processing → completed | failed | skipped); `search` ranks completed files by their
 * best chunk. Image files cannot be embedded by a text model: they become `skipped`, and a request made only of them is
 * 503 MODEL_NOT_MULTIMODAL.
 */
import { type Db, sql } from '@wds/db';
import { ServiceError, notFound } from '@wds/errors';
import { type ExactVectorIndex, chunkText, completeItem, extractText, reportStuck, searchChunks, skipItem, upsertPending } from '@wds/embeddings';
import type { BlobStore } from '@wds/storage';
import type { SearchEmbedder } from './embedder.js';
import type { Enqueue } from './jobs.js';
import { type StatusCounts, claimForRun, countsOf } from './status.js';

export interface FileDeps {
  db: Db;
  blobs: BlobStore;
  embedder: SearchEmbedder;
  pgvector: boolean;
  /** Exact searches without pgvector run in process with it (see ExactVectorIndex); absent, PostgreSQL scans. */
  vectorIndex?: ExactVectorIndex;
  enqueue: Enqueue;
  /** Files above this size are skipped (their text is not extracted). */
  maxExtractBytes: number;
  /** Processing items older than this are reported failed (they can be regenerated). */
  stuckAfterMs: number;
}

export interface FileEmbedding {
  file_id: string;
  filename: string;
  status: 'pending' | 'processing' | 'completed' | 'failed' | 'skipped';
  error: string | null;
  updated_at: string;
}

/** The workspace's files among `ids` that are not deleted. */
async function liveFiles(db: Db, workspaceId: string, ids: string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('platform.files')
    .select(['id', 'filename', 'content_type'])
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .where('id', 'in', ids)
    .execute();
}

const isImage = (contentType: string) => contentType.toLowerCase().startsWith('image/');

/** Queues the files for embedding (with `force`, also those already completed). */
export async function embedFiles(deps: FileDeps, workspaceId: string, fileIds: string[], force: boolean): Promise<{ files: FileEmbedding[] }> {
  const embedder = deps.embedder.require();
  const ids = [...new Set(fileIds)];
  const files = await liveFiles(deps.db, workspaceId, ids);
  const missing = ids.filter((id) => !files.some((f) => f.id === id));
  if (missing.length > 0) throw notFound(`File ${missing.join(', ')}`);
  const images = embedder.multimodal ? [] : files.filter((f) => isImage(f.content_type));
  const texts = files.filter((f) => !images.includes(f));
  // Without `force`, files already embedded (or on their way) are left as they are; failed and skipped ones retry.
  const current = await deps.db
    .selectFrom('platform.embedding_items')
    .select(['file_id', 'status'])
    .where('workspace_id', '=', workspaceId)
    .where('surface', '=', 'file')
    .where('file_id', 'in', ids)
    .execute();
  const busy = new Set(force ? [] : current.filter((c) => c.status !== 'failed' && c.status !== 'skipped').map((c) => c.file_id));
  const fresh = files.filter((f) => !busy.has(f.id));
  const itemIds = await upsertPending(deps.db, fresh.map((f) => ({ workspaceId, surface: 'file' as const, fileId: f.id })));
  for (const [i, f] of fresh.entries()) {
    const itemId = itemIds[i] as string;
    if (images.includes(f)) await skipItem(deps.db, itemId, 'image files need a multimodal embedding model');
    else await deps.enqueue({ kind: 'file', workspaceId, itemId });
  }
  if (texts.length === 0 && images.length > 0) {
    throw new ServiceError(
      'MODEL_NOT_MULTIMODAL',
      `The embedding model (${embedder.model}) embeds text only; image files were skipped`,
      images.map((f) => f.filename).join(', '),
    );
  }
  return { files: (await fileStatus(deps, workspaceId, ids)).files };
}

/**
 * File items left pending without a job (its enqueue failed after the item was committed, or the file was
 * regenerated while its job ran) are queued again: those pending longer than `olderThanMs`, at most 500 a sweep.
 * Jobs are keyed by item, so an item whose job still waits is not queued twice. Returns how many were looked at.
 */
export async function requeuePendingFiles(db: Db, enqueue: Enqueue, opts: { olderThanMs: number }): Promise<number> {
  const { rows } = await sql<{ id: string; workspace_id: string }>`
    SELECT id, workspace_id FROM platform.embedding_items
     WHERE surface = 'file' AND status = 'pending'
       AND updated_at < now() - ${Math.max(0, Math.floor(opts.olderThanMs))} * interval '1 millisecond'
     ORDER BY updated_at LIMIT 500`.execute(db);
  for (const r of rows) await enqueue({ kind: 'file', workspaceId: r.workspace_id, itemId: r.id });
  return rows.length;
}

/** One job: the file's text, chunked and embedded. Throws to let the queue retry; the last failure marks it failed. */
export async function runFileJob(deps: FileDeps, itemId: string, retry = false): Promise<void> {
  const item = await claimForRun(deps.db, itemId, retry);
  if (!item) return; // not pending any more (done by an earlier delivery, or regenerated and queued again)
  const ref = { id: item.id, attempts: item.attempts };
  const file = await deps.db
    .selectFrom('platform.files')
    .select(['id', 'filename', 'content_type', 'size', 'blob_key'])
    .where('workspace_id', '=', item.workspace_id)
    .where('id', '=', item.file_id as string)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!file) return void (await skipItem(deps.db, ref, 'the file was deleted'));
  if (Number(file.size) > deps.maxExtractBytes) {
    return void (await skipItem(deps.db, ref, `the file is larger than ${deps.maxExtractBytes} bytes, the limit for text extraction`));
  }
  const bytes = await readAll((await deps.blobs.get(file.blob_key)) as AsyncIterable<Uint8Array>, deps.maxExtractBytes);
  const extracted = await extractText(bytes, file.content_type, file.filename);
  if ('skipped' in extracted) return void (await skipItem(deps.db, ref, extracted.skipped));
  const chunks = chunkText(extracted.text).map((c) => c.content);
  if (chunks.length === 0) return void (await skipItem(deps.db, ref, 'the file has no text'));
  const embedder = deps.embedder.require();
  const vectors = await deps.embedder.embedAll(chunks);
  await completeItem(
    deps.db,
    ref,
    {
      model: embedder.model,
      dimensions: embedder.dimensions,
      contentHash: item.content_hash ?? null,
      chunks: chunks.map((content, i) => ({ content, embedding: vectors[i] as number[] })),
    },
    { useVector: deps.pgvector },
  );
}

export async function readAll(stream: AsyncIterable<Uint8Array>, max: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.byteLength;
    if (size > max) throw new Error('file grew past the extraction limit');
    parts.push(chunk);
  }
  return Buffer.concat(parts, size);
}

export async function fileStatus(
  deps: Pick<FileDeps, 'db' | 'stuckAfterMs'>,
  workspaceId: string,
  fileIds?: string[],
): Promise<{ counts: StatusCounts; files: FileEmbedding[] }> {
  await reportStuck(deps.db, { olderThanMs: deps.stuckAfterMs });
  let q = deps.db
    .selectFrom('platform.embedding_items as i')
    .innerJoin('platform.files as f', 'f.id', 'i.file_id')
    .select(['i.file_id', 'f.filename', 'i.status', 'i.error', 'i.updated_at'])
    .where('i.workspace_id', '=', workspaceId)
    .where('i.surface', '=', 'file')
    .where('f.deleted_at', 'is', null)
    .orderBy('i.updated_at', 'desc');
  if (fileIds) q = q.where('i.file_id', 'in', fileIds);
  const rows = await q.execute();
  const files = rows.map((r) => ({
    file_id: r.file_id as string,
    filename: r.filename,
    status: r.status as FileEmbedding['status'],
    error: r.error,
    updated_at: r.updated_at.toISOString(),
  }));
  return { counts: countsOf(files), files };
}

/** The states of the workspace's live files, counted in the database (a search needs no per-file list). */
async function fileCounts(deps: Pick<FileDeps, 'db' | 'stuckAfterMs'>, workspaceId: string): Promise<StatusCounts> {
  await reportStuck(deps.db, { olderThanMs: deps.stuckAfterMs });
  const rows = await deps.db
    .selectFrom('platform.embedding_items as i')
    .innerJoin('platform.files as f', 'f.id', 'i.file_id')
    .select(['i.status', (eb) => eb.fn.countAll<string>().as('n')])
    .where('i.workspace_id', '=', workspaceId)
    .where('i.surface', '=', 'file')
    .where('f.deleted_at', 'is', null)
    .groupBy('i.status')
    .execute();
  const counts = countsOf([]);
  for (const r of rows) if (r.status in counts) counts[r.status as keyof StatusCounts] = Number(r.n);
  return counts;
}

export interface FileHit {
  file_id: string;
  filename: string;
  content_type: string;
  score: number;
  chunk_index: number;
  content: string;
}

export async function searchFiles(
  deps: FileDeps,
  workspaceId: string,
  query: string,
  limit: number,
): Promise<{ results: FileHit[]; status: StatusCounts }> {
  const embedder = deps.embedder.require();
  const counts = await fileCounts(deps, workspaceId);
  if (counts.completed === 0 && counts.pending + counts.processing > 0) {
    throw new ServiceError(
      'CONFLICT',
      `No file embeddings are completed yet (${counts.pending} pending, ${counts.processing} processing)`,
      'poll GET …/embeddings/files/status until files are completed',
    );
  }
  const [vector] = await embedder.embed([query]);
  const hits = await searchChunks(deps.db, {
    workspaceId,
    surface: 'file',
    vector: Array.from(vector as number[]),
    limit: limit * 2,
    model: embedder.model,
    useVector: deps.pgvector,
    index: deps.vectorIndex,
  });
  const ids = [...new Set(hits.map((h) => h.file_id as string))];
  const live = await liveFiles(deps.db, workspaceId, ids);
  const byId = new Map(live.map((f) => [f.id, f]));
  const results: FileHit[] = [];
  for (const h of hits) {
    const f = byId.get(h.file_id as string);
    if (!f) continue;
    results.push({ file_id: f.id, filename: f.filename, content_type: f.content_type, score: h.score, chunk_index: h.chunk_index, content: h.content });
    if (results.length === limit) break;
  }
  return { results, status: counts };
}

/** A deleted file's vectors go with it (its record stays, soft-deleted). */
export async function forgetFile(db: Db, workspaceId: string, fileId: string): Promise<void> {
  await sql`DELETE FROM platform.embedding_items WHERE workspace_id = ${workspaceId} AND surface = 'file' AND file_id = ${fileId}`.execute(db);
}
