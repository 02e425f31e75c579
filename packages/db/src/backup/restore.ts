/**
 * Restores a dump made by dumpDatabase into an EMPTY database, as whatever role the URL names:
 * 1. the dumped roles are created where missing (NOLOGIN, no password: the service gives workspace roles their
 *    LOGIN and derived password on first use) and granted to the restoring role where they were to the old one;
 * 2. pg_restore --no-owner in one transaction, stopping at the first error: what the old service role owned now
 *    belongs to the restoring role (the new service), grants to the recreated roles apply as dumped;
 * 3. objects the archive lists with a recreated role as owner are given back to it (a workspace owns its tables, the
 *    row capture role its trigger function);
 * 4. what a dump of one database does not carry is set again: USAGE on the `sql` language follows plpgsql's, as
 *    migration 0008 set both (pg_dump keeps plpgsql's privileges, not those of the built-in `sql`).
 * Language privileges need a superuser: restoring as another role (a managed database) leaves them as they are,
 * as migration 0008 does there.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { DumpedRole } from './dump.js';
import { connectionArgs, listArchive, type PgTools, runPgTool } from './pg-tools.js';

export class TargetNotEmptyError extends Error {
  constructor(what: string) {
    super(`the target database is not empty (${what}); restore into a new database or a new DATA_DIR`);
    this.name = 'TargetNotEmptyError';
  }
}

/** Refuses a database that holds anything but an empty `public` schema (a restore never merges into live data). */
export async function assertEmptyDatabase(url: string): Promise<{ serverMajor: number }> {
  const client = new pg.Client({ connectionString: url, application_name: 'wds-restore' });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query<{ schemas: string[] | null; relations: number; num: string }>(
      `SELECT (SELECT array_agg(nspname::text ORDER BY nspname) FROM pg_namespace
                WHERE nspname NOT IN ('public', 'information_schema') AND nspname NOT LIKE 'pg\\_%') AS schemas,
              (SELECT count(*)::int FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public') AS relations,
              current_setting('server_version_num') AS num`,
    );
    const r = rows[0]!;
    if (r.schemas?.length) throw new TargetNotEmptyError(`schemas ${r.schemas.join(', ')}`);
    if (r.relations > 0) throw new TargetNotEmptyError(`${r.relations} relations in schema public`);
    return { serverMajor: Math.floor(Number(r.num) / 10000) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

const quote = (ident: string): string => `"${ident.replace(/"/g, '""')}"`;

/** Objects whose owner a restore sets again, by the archive's entry type; their parts (indexes, defaults, owned sequences) follow. */
const REOWN: Record<string, { catalog: 'pg_class' | 'pg_type' | 'pg_proc'; alter: string }> = {
  TABLE: { catalog: 'pg_class', alter: 'TABLE' },
  'FOREIGN TABLE': { catalog: 'pg_class', alter: 'FOREIGN TABLE' },
  VIEW: { catalog: 'pg_class', alter: 'VIEW' },
  'MATERIALIZED VIEW': { catalog: 'pg_class', alter: 'MATERIALIZED VIEW' },
  SEQUENCE: { catalog: 'pg_class', alter: 'SEQUENCE' },
  TYPE: { catalog: 'pg_type', alter: 'TYPE' },
  DOMAIN: { catalog: 'pg_type', alter: 'DOMAIN' },
  // Row capture's trigger function belongs to wds_row_capture (migration 0016), so it runs with that role's rights.
  FUNCTION: { catalog: 'pg_proc', alter: 'FUNCTION' },
};
const CURRENT_OWNER = {
  pg_class: 'SELECT relowner::regrole::text AS owner FROM pg_class WHERE oid = $1::regclass',
  pg_type: 'SELECT typowner::regrole::text AS owner FROM pg_type WHERE oid = $1::regtype',
  pg_proc: 'SELECT proowner::regrole::text AS owner FROM pg_proc WHERE oid = $1::regprocedure',
} as const;
/** Entries that are parts or data of an object above, or carry no owner of their own. */
const FOLLOWS = new Set([
  'TABLE DATA', 'SEQUENCE SET', 'SEQUENCE OWNED BY', 'INDEX', 'INDEX ATTACH', 'TABLE ATTACH', 'CONSTRAINT', 'FK CONSTRAINT',
  'CHECK CONSTRAINT', 'DEFAULT', 'TRIGGER', 'RULE', 'POLICY', 'ROW SECURITY', 'COMMENT', 'ACL', 'STATISTICS DATA',
]);

interface Owned {
  type: string;
  schema: string;
  name: string;
  owner: string;
}

/**
 * The archive's entries owned by one of `roles`. A line of `pg_restore --list` reads
 * `<id>; <catalog oid> <oid> <TYPE> <schema> <name> <owner>`; names of the objects re-owned here have no spaces
 * (a type with spaces is matched whole against the known types first).
 */
export function ownedEntries(toc: string, roles: Set<string>): Owned[] {
  const types = [...Object.keys(REOWN), ...FOLLOWS].sort((a, b) => b.length - a.length);
  const owned: Owned[] = [];
  for (const line of toc.split('\n')) {
    const m = /^\d+; \d+ \d+ (.*)$/.exec(line);
    if (!m) continue;
    const rest = m[1]!;
    const owner = rest.slice(rest.lastIndexOf(' ') + 1);
    if (!roles.has(owner)) continue;
    const type = types.find((t) => rest.startsWith(`${t} `));
    if (!type) throw new Error(`the archive has an object owned by ${owner} that a restore cannot give back: ${line}`);
    if (FOLLOWS.has(type)) continue;
    // `<schema> <name>`; a function's name carries its argument types, which may have spaces: `f(integer, text)`.
    const what = rest.slice(type.length + 1, rest.length - owner.length - 1);
    const space = what.indexOf(' ');
    const schema = what.slice(0, Math.max(0, space));
    const name = what.slice(space + 1);
    if (space <= 0 || !name || (type === 'FUNCTION' ? !/^[^\s(]+\(.*\)$/.test(name) : name.includes(' '))) throw new Error(`cannot read the archive entry: ${line}`);
    owned.push({ type, schema, name, owner });
  }
  return owned;
}

export async function restoreDatabase(opts: { url: string; file: string; tools: PgTools; roles: DumpedRole[] }): Promise<void> {
  const { tools } = opts;
  const client = new pg.Client({ connectionString: opts.url, application_name: 'wds-restore' });
  client.on('error', () => {});
  await client.connect();
  try {
    const superuser = (await client.query<{ s: boolean }>('SELECT rolsuper AS s FROM pg_roles WHERE rolname = current_user')).rows[0]?.s === true;
    const toc = await listArchive(tools, opts.file);
    const owned = ownedEntries(toc, new Set(opts.roles.map((r) => r.name)));
    const owners = new Set(owned.map((o) => o.owner));

    // 1. Roles (they belong to the server: a fresh server has none of them). A role that is no superuser may give an
    //    object to another role only as its member: it becomes one of every role that owns something.
    for (const role of opts.roles) {
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role.name]);
      if (!exists.rowCount) await client.query(`CREATE ROLE ${quote(role.name)} NOLOGIN NOINHERIT`);
      if (role.grantedToService || (!superuser && owners.has(role.name))) await client.query(`GRANT ${quote(role.name)} TO CURRENT_USER`);
    }

    // 2. The archive, all or nothing (less the language privileges, unless we may set them).
    const listDir = await mkdtemp(join(tmpdir(), 'wds-restore-'));
    try {
      const list = join(listDir, 'toc.list');
      await writeFile(list, superuser ? toc : toc.replace(/^(\d+; \d+ \d+ ACL - LANGUAGE )/gm, ';$1'));
      const { dbname, env } = connectionArgs(opts.url);
      await runPgTool(tools.pgRestore, ['--no-owner', '--single-transaction', '--exit-on-error', `--use-list=${list}`, `--dbname=${dbname}`, opts.file], env);
    } finally {
      await rm(listDir, { recursive: true, force: true });
    }

    // 3. Owners, from the archive's own table of contents.
    await client.query('BEGIN');
    for (const o of owned) {
      const { catalog, alter } = REOWN[o.type]!;
      const paren = o.name.indexOf('(');
      const target = catalog === 'pg_proc' ? `${quote(o.schema)}.${quote(o.name.slice(0, paren))}${o.name.slice(paren)}` : `${quote(o.schema)}.${quote(o.name)}`;
      // An owned sequence (identity, serial) has already followed its table; ALTER would refuse to move it alone.
      const current = await client.query<{ owner: string }>(CURRENT_OWNER[catalog], [target]);
      if (current.rows[0]?.owner.replace(/^"|"$/g, '') === o.owner) continue;
      // A new owner needs CREATE on the schema (workspace roles have it on user_data; the row capture role is lent it).
      const lend = !superuser && (await client.query<{ c: boolean }>('SELECT has_schema_privilege($1, $2, \'CREATE\') AS c', [o.owner, o.schema])).rows[0]?.c === false;
      if (lend) await client.query(`GRANT CREATE ON SCHEMA ${quote(o.schema)} TO ${quote(o.owner)}`);
      await client.query(`ALTER ${alter} ${target} OWNER TO ${quote(o.owner)}`);
      if (lend) await client.query(`REVOKE CREATE ON SCHEMA ${quote(o.schema)} FROM ${quote(o.owner)}`);
    }
    await client.query('COMMIT');

    // 4. The built-in `sql` language's privileges, which pg_dump does not dump: as plpgsql's.
    if (superuser) {
      const { rows } = await client.query<{ usage: boolean }>(`SELECT has_language_privilege('public', 'plpgsql', 'USAGE') AS usage`);
      await client.query(rows[0]?.usage === false ? 'REVOKE USAGE ON LANGUAGE sql FROM PUBLIC' : 'GRANT USAGE ON LANGUAGE sql TO PUBLIC');
    }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}
