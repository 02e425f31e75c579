// The two things pg-boss 10's API cannot do atomically, done in SQL over its own `job` table (schema 24 of
// pg-boss 10.4.2, pinned in package.json; re-check these queries when upgrading). Both run in a transaction whose
// connection is handed to pg-boss's own send/complete/fail through their `db` option.
import type pg from 'pg';
import type PgBoss from 'pg-boss';

/** A pg-boss `db` that runs on one checked-out connection, so pg-boss's statements join our transaction. */
export type TransactionDb = PgBoss.Db;

export async function inTransaction<T>(pool: pg.Pool, work: (db: TransactionDb) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work({ executeSql: (text, values) => client.query(text, values) });
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * Serialises enqueues of one (queue, key), then tells whether a job with that key is still queued, waiting for a
 * retry or running. Under the lock the check and the insert that follows cannot interleave with another enqueue.
 */
export async function lockAndFindPendingJob(db: TransactionDb, schema: string, name: string, key: string) {
  await db.executeSql('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    JSON.stringify(['@wds/jobs', schema, name, key]),
  ]);
  const { rows } = await db.executeSql(
    `SELECT id FROM ${schema}.job WHERE name = $1 AND singleton_key = $2 AND state <= 'active' LIMIT 1`,
    [name, key],
  );
  return rows.length > 0;
}

/**
 * Locks the job if it is still in the attempt this worker fetched: active, with the retry count it was fetched
 * with. False when maintenance already expired it or another worker fetched the retry; settling it then would
 * fail or complete someone else's attempt.
 */
export async function lockOwnAttempt(db: TransactionDb, schema: string, name: string, id: string, retryCount: number) {
  const { rows } = await db.executeSql(
    `SELECT id FROM ${schema}.job WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3 FOR UPDATE`,
    [name, id, retryCount],
  );
  return rows.length > 0;
}
