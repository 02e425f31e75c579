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
 * Serialises enqueues of one (queue, key): under this transaction-scoped lock, checking for a pending job and
 * inserting the next one cannot interleave with another enqueue of the same key.
 */
export async function lockKey(db: TransactionDb, schema: string, name: string, key: string): Promise<void> {
  await db.executeSql('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    JSON.stringify(['@wds/jobs', schema, name, key]),
  ]);
}

/**
 * The running jobs with the key whose deadline has passed (their heartbeat stopped: the process died), locked, so
 * that the caller can expire them before maintenance gets to it.
 */
export async function lockExpiredJobs(db: TransactionDb, schema: string, name: string, key: string): Promise<string[]> {
  const { rows } = await db.executeSql(
    `SELECT id FROM ${schema}.job WHERE name = $1 AND singleton_key = $2 AND state = 'active'
        AND started_on + expire_in < now() FOR UPDATE`,
    [name, key],
  );
  return rows.map((r: { id: string }) => r.id);
}

/** Whether a job with the key is still queued, waiting for a retry or running (and alive). */
export async function findPendingJob(db: TransactionDb, schema: string, name: string, key: string): Promise<boolean> {
  const { rows } = await db.executeSql(
    `SELECT id FROM ${schema}.job WHERE name = $1 AND singleton_key = $2 AND state <= 'active' LIMIT 1`,
    [name, key],
  );
  return rows.length > 0;
}

/**
 * The heartbeat of a running attempt: its deadline in the database becomes `staleSeconds` from now, but never
 * later than `deadlineSeconds` after it started. pg-boss's maintenance fails an active job once
 * `started_on + expire_in` has passed, so a job whose process stopped beating is expired soon after. False when the
 * attempt is no longer the active one this worker fetched (expired and retried, or settled).
 */
export async function beat(
  db: TransactionDb,
  schema: string,
  job: { name: string; id: string; retryCount: number },
  staleSeconds: number,
  deadlineSeconds: number,
): Promise<boolean> {
  const { rows } = await db.executeSql(
    `UPDATE ${schema}.job
        SET expire_in = LEAST(now() - started_on + make_interval(secs => $4), make_interval(secs => $5))
      WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3
      RETURNING id`,
    [job.name, job.id, job.retryCount, staleSeconds, deadlineSeconds],
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

/**
 * Gives the (locked, active) job one more attempt: failing it next then retries it even when this was its last
 * attempt. For an attempt cut by this process's shutdown, which says nothing about the job.
 */
export async function grantExtraAttempt(db: TransactionDb, schema: string, name: string, id: string): Promise<void> {
  await db.executeSql(`UPDATE ${schema}.job SET retry_limit = retry_limit + 1 WHERE name = $1 AND id = $2 AND state = 'active'`, [name, id]);
}
