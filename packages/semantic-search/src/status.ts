import { type Db, sql } from '@wds/db';

export interface StatusCounts {
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  skipped: number;
}

export function countsOf(items: { status: string }[]): StatusCounts {
  const c: StatusCounts = { pending: 0, processing: 0, completed: 0, failed: 0, skipped: 0 };
  for (const i of items) if (i.status in c) c[i.status as keyof StatusCounts]++;
  return c;
}

export interface ClaimedItem {
  id: string;
  /** The fencing token of this claim: completing with it fails once the item was reset or claimed again. */
  attempts: number;
  workspace_id: string;
  file_id: string | null;
  content_hash: string | null;
}

/**
 * Moves a pending item to processing and returns it; null when it is not pending (done by an earlier delivery, or
 * queued again). A retry (`takeOver`) also takes an item its failed or crashed attempt left in processing, or that
 * a status read reported failed for running past the deadline.
 */
export async function claimForRun(db: Db, id: string, takeOver: boolean): Promise<ClaimedItem | null> {
  const { rows } = await sql<ClaimedItem>`
    UPDATE platform.embedding_items
       SET status = 'processing', attempts = attempts + 1, started_at = now(), updated_at = now(), error = NULL
     WHERE id = ${id} AND (status = 'pending' OR (${takeOver} AND status IN ('processing', 'failed')))
    RETURNING id, attempts, workspace_id, file_id, content_hash`.execute(db);
  return rows[0] ?? null;
}
