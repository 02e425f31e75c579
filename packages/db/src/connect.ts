import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

// int8 (count(*) and friends) as JS numbers: our counts stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface DbOptions {
  /** Pool size; PostgreSQL connections are the scarce resource, not Node. */
  max?: number;
  applicationName?: string;
}

export type Db = Kysely<Database>;

export function createDb(url: string, opts: DbOptions = {}): { db: Db; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'wds',
    // The service never relies on row-level security; with it off, a policy some workspace put on its own table
    // makes the service's query fail instead of running that policy's expressions with the service's rights.
    options: '-c row_security=off',
  });
  // An idle client that errors (server restart) must not crash the process; neither must one that is checked out
  // (a Kysely transaction between two statements): the pool removes an idle one, a checked-out one fails its
  // query and is discarded on release.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
}

/** Whether the database answers within `timeoutMs` (a readiness check; never waits longer). */
export async function databaseAnswers(db: Db, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`SELECT 1`.execute(db),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('readiness check timed out')), timeoutMs);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** NOTIFY on a channel from inside a transaction: listeners receive `payload` when (and only if) it commits. */
export async function notifyOnCommit(db: Db, channel: string, payload: string): Promise<void> {
  await sql`SELECT pg_notify(${channel}, ${payload})`.execute(db);
}
