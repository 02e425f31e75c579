/**
 * The database side of a backup: a snapshot that pg_dump and the caller's own reads share, the dump itself (custom
 * format), and the roles the database refers to, which a dump of one database does not contain (roles belong to
 * the server).
 *
 * Consistency: `openSnapshot` starts a REPEATABLE READ transaction and exports its snapshot; pg_dump runs with
 * `--snapshot`, so it sees exactly what the caller's queries in `snapshot.query` see (e.g. which blobs the dumped
 * rows reference). The snapshot lives as long as that transaction: close it only after the dump.
 */
import pg from 'pg';
import { connectionArgs, type PgTools, runPgTool } from './pg-tools.js';

export interface DumpedRole {
  name: string;
  /** The service's role was a member of it (`GRANT role TO service`): workspace roles are, so the service manages their tables. */
  grantedToService: boolean;
}

export interface DatabaseSnapshot {
  /** pg_export_snapshot()'s id, for pg_dump --snapshot. */
  id: string;
  /** `server_version`, e.g. "15.18". */
  serverVersion: string;
  serverMajor: number;
  /** The role the service connects as; its objects belong to whoever restores. */
  serviceRole: string;
  /**
   * Every other role this database's objects name (owners, grantees; pg_shdepend), superusers aside. A restore
   * recreates them, so ownership and grants apply on a server that has never seen them.
   */
  roles: DumpedRole[];
  /** A query inside the snapshot's transaction. */
  query<R>(text: string, values?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

export async function openSnapshot(url: string, opts: { beforeSnapshot?: (query: (text: string) => Promise<unknown>) => Promise<void> } = {}): Promise<DatabaseSnapshot> {
  const client = new pg.Client({ connectionString: url, application_name: 'wds-backup' });
  client.on('error', () => {});
  await client.connect();
  try {
    await opts.beforeSnapshot?.((text) => client.query(text));
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    const { rows } = await client.query<{ id: string; version: string; num: string; service: string }>(
      `SELECT pg_export_snapshot() AS id, current_setting('server_version') AS version,
              current_setting('server_version_num') AS num, current_user AS service`,
    );
    const head = rows[0]!;
    const roles = await client.query<{ name: string; granted: boolean }>(
      `SELECT r.rolname AS name,
              EXISTS (SELECT 1 FROM pg_auth_members m WHERE m.roleid = r.oid AND m.member = (SELECT oid FROM pg_roles WHERE rolname = current_user)) AS granted
         FROM pg_roles r
        WHERE r.oid IN (SELECT refobjid FROM pg_shdepend
                         WHERE refclassid = 'pg_authid'::regclass
                           AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database()))
          AND NOT r.rolsuper AND r.rolname <> current_user
        ORDER BY 1`,
    );
    return {
      id: head.id,
      serverVersion: head.version.split(' ')[0] ?? head.version,
      serverMajor: Math.floor(Number(head.num) / 10000),
      serviceRole: head.service,
      roles: roles.rows.map((r) => ({ name: r.name, grantedToService: r.granted })),
      query: async <R,>(text: string, values?: unknown[]) => (await client.query(text, values)).rows as R[],
      close: async () => {
        await client.query('COMMIT').catch(() => undefined);
        await client.end().catch(() => undefined);
      },
    };
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

/** pg_dump of the whole database as it is in `snapshot`, custom format (compressed; pg_restore reads it). */
export async function dumpDatabase(opts: { url: string; snapshot: DatabaseSnapshot; tools: PgTools; file: string }): Promise<void> {
  const { tools, snapshot } = opts;
  if (tools.major < snapshot.serverMajor) {
    throw new Error(
      `pg_dump ${tools.version} (${tools.pgDump}) cannot dump a PostgreSQL ${snapshot.serverVersion} server: install the client programs of version ${snapshot.serverMajor} or newer and set PG_BIN_DIR`,
    );
  }
  const { dbname, env } = connectionArgs(opts.url);
  await runPgTool(tools.pgDump, ['--format=custom', `--snapshot=${snapshot.id}`, `--file=${opts.file}`, `--dbname=${dbname}`], env);
}
