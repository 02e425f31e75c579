/**
 * The blob deletion lock. A backup holds it shared (a session-level advisory lock) from before its snapshot until
 * its last blob is copied; code that deletes the blob of a file record that has existed (a purge, not the clean-up
 * of a failed upload) holds it exclusively across deleting the record and the blob. So a blob referenced by a
 * backup's snapshot is never deleted before the backup has copied it.
 */
import { type Db, sql } from '@wds/db';

/** 'wdsb' */
export const BLOB_DELETION_LOCK = 0x77_64_73_62;

/** Runs `work` holding the blob deletion lock exclusively on one connection (waits while a backup runs). */
export async function withBlobDeletionLock<T>(db: Db, work: () => Promise<T>): Promise<T> {
  return db.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(${BLOB_DELETION_LOCK})`.execute(conn);
    try {
      return await work();
    } finally {
      await sql`SELECT pg_advisory_unlock(${BLOB_DELETION_LOCK})`.execute(conn);
    }
  });
}

/**
 * Like withBlobDeletionLock, but does not wait: `undefined` without running `work` while a backup holds the lock.
 * `work` gets the locked connection and must make its queries on it (taking a second connection from the pool while
 * holding this one could wait forever on a pool of one).
 */
export async function tryWithBlobDeletionLock<T>(db: Db, work: (conn: Db) => Promise<T>): Promise<T | undefined> {
  return db.connection().execute(async (conn) => {
    const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${BLOB_DELETION_LOCK}) AS locked`.execute(conn);
    if (!rows[0]?.locked) return undefined;
    try {
      return await work(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(${BLOB_DELETION_LOCK})`.execute(conn);
    }
  });
}
