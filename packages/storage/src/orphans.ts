/**
 * Orphan blobs: a put completes before its file record is inserted, so a crash (or a failed insert whose clean-up
 * did not run) between the two leaves a blob no record points at. The sweep lists the store and removes the blobs
 * older than a grace period that no row of `platform.files` references (soft-deleted files keep theirs). The grace
 * period is what keeps an upload in progress safe: its blob is complete only moments before its record is written,
 * so it must be longer than that moment can be — for S3, where a multipart object is dated by its start, longer
 * than the longest upload.
 *
 * The store must belong to this database alone: a blob another deployment wrote into the same directory or bucket
 * prefix is an orphan to this one.
 */
import type { Db } from '@wds/db';
import type { BlobStore } from './blob-store.js';
import { tryWithBlobDeletionLock } from './backup/lock.js';

/** Keys looked up in one query. */
const BATCH = 500;

export interface OrphanSweep {
  db: Db;
  blobs: BlobStore;
  /** Blobs written less than this long ago are kept, referenced or not. */
  graceMs: number;
  /** Stops the sweep between batches (the process is stopping). */
  signal?: AbortSignal;
}

/** Removes unreferenced blobs older than the grace period; returns how many. */
export async function sweepOrphanBlobs(opts: OrphanSweep): Promise<number> {
  const cutoff = Date.now() - opts.graceMs;
  let removed = 0;
  let batch: string[] = [];
  for await (const blob of opts.blobs.list()) {
    if (opts.signal?.aborted) return removed;
    if (blob.modifiedAt.getTime() >= cutoff) continue;
    batch.push(blob.key);
    if (batch.length === BATCH) {
      removed += await removeUnreferenced(opts, batch);
      batch = [];
    }
  }
  if (batch.length > 0 && !opts.signal?.aborted) removed += await removeUnreferenced(opts, batch);
  return removed;
}

// Under the blob deletion lock: a record hard-deleted after a running backup's snapshot (a deleted workspace) leaves
// a blob that backup still copies. While a backup runs the batch is skipped (the next sweep takes it), so neither
// waits for the other.
async function removeUnreferenced(opts: OrphanSweep, keys: string[]): Promise<number> {
  return (await tryWithBlobDeletionLock(opts.db, (conn) => removeUnreferencedNow(conn, opts, keys))) ?? 0;
}

async function removeUnreferencedNow(conn: Db, opts: OrphanSweep, keys: string[]): Promise<number> {
  const rows = await conn.selectFrom('platform.files').select('blob_key').where('blob_key', 'in', keys).execute();
  const referenced = new Set(rows.map((r) => r.blob_key));
  let removed = 0;
  for (const key of keys) {
    if (referenced.has(key)) continue;
    if (opts.signal?.aborted) break;
    await opts.blobs.delete(key);
    removed++;
  }
  return removed;
}
