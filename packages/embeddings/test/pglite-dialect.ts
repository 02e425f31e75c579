/**
 * Kysely over PGlite for tests of the pgvector path: a pool-like object over PostgresDialect. PGlite is a single
 * connection, so the pool hands it out to one holder at a time (a transaction keeps it until it releases).
 */
import type { PGlite } from '@electric-sql/pglite';
import type { Database, Db } from '@wds/db';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';

export function pgliteDb(pglite: PGlite): Db {
  let tail: Promise<void> = Promise.resolve();

  const pool: PostgresPool = {
    async connect() {
      let release!: () => void;
      const previous = tail;
      tail = new Promise<void>((resolve) => {
        release = resolve;
      });
      await previous;
      const client = {
        async query(text: string, parameters: ReadonlyArray<unknown>) {
          // Without parameters use the simple protocol, which (like pg) accepts several statements, e.g. migrations.
          const result =
            parameters.length === 0 ? (await pglite.exec(text)).at(-1)! : await pglite.query(text, [...parameters]);
          return {
            command: (result.command ?? text.trim().split(/\s+/, 1)[0]!.toUpperCase()) as PostgresQueryResult<unknown>['command'],
            rowCount: result.affectedRows ?? result.rows.length,
            rows: result.rows,
          };
        },
        release: () => release(),
      };
      return client as unknown as PostgresPoolClient;
    },
    async end() {},
  };
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
