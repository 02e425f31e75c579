import { createHash, createHmac } from 'node:crypto';
import { USER_SCHEMA, workspaceRole } from '@wds/sql-rewriter';
import type pg from 'pg';

/**
 * Each workspace has its own PostgreSQL LOGIN role that owns its tables, and its SQL runs on connections logged
 * in as that role — never on a service session that switches roles. The role is no superuser, cannot create
 * roles or databases, and is a member of no other role, so even text that escaped the rewriter cannot reach
 * another role (`SET ROLE`, `RESET ROLE`, `SET SESSION AUTHORIZATION` and `set_config('role', …)` all fail),
 * read the `platform` schema or another workspace's tables.
 */

/** Serialises role and grant changes in one database: concurrent GRANTs on one schema fail with "tuple concurrently updated". */
const ROLE_LOCK_KEY = 0x77_64_73_72; // 'wdsr'

/**
 * Memory and disk one backend of a workspace may use for sorts, hashes and temporary files (issue 28): each sort or
 * hash node of a plan spills to disk past work_mem (× hash_mem_multiplier), and its temporary files end the
 * statement past temp_file_limit. What the executor builds outside those (strings, arrays, aggregates) is bounded by
 * the rewriter (sql-rewriter/src/bounds.ts); docs/operations.md says how to cap a backend as a whole.
 * temp_file_limit is a superuser setting: it is set only where the service may (superuser, or
 * `GRANT SET ON PARAMETER temp_file_limit`); elsewhere the server's own value holds.
 */
export const WORKSPACE_ROLE_SETTINGS: Readonly<Record<string, string>> = {
  work_mem: '8MB',
  hash_mem_multiplier: '1',
  maintenance_work_mem: '64MB',
  temp_file_limit: '1GB',
};

/** Workspace passwords are derived, so every process of the service computes the same one without storing it. */
export const rolePassword = (secret: string, role: string): string =>
  createHmac('sha256', secret).update(`wds-workspace-role:${role}`).digest('base64url');

/**
 * The derivation secret: a hash of `configured` (SQL_ROLE_SECRET or SECRETS_KEY), else of the service's own database
 * password. Without either the passwords would be guessable by anyone who can reach the database: refuse.
 */
export const roleSecret = (databaseUrl: string, configured?: string): string => {
  const password = decodeURIComponent(new URL(databaseUrl).password);
  const seed = configured || password;
  if (!seed) {
    throw new Error('workspace role passwords need a secret: DATABASE_URL has no password, so set SQL_ROLE_SECRET (or SECRETS_KEY)');
  }
  return createHash('sha256').update(`wds-role-secret:${seed}`).digest('base64url');
};

/**
 * Creates the workspace's role (or brings an existing one up to date: LOGIN, password, settings) and grants it
 * the workspace schema. Idempotent and safe to call from several processes at once.
 */
export async function ensureWorkspaceRole(service: pg.PoolClient | pg.Client, workspaceId: string, password: string): Promise<string> {
  const role = workspaceRole(workspaceId);
  const ident = `"${role}"`; // [a-z0-9_] only, from a UUID
  const secret = `'${password}'`; // base64url only
  await service.query('BEGIN');
  try {
    await service.query('SELECT pg_advisory_xact_lock($1)', [ROLE_LOCK_KEY]);
    const { rowCount } = await service.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    // CREATE ROLE's defaults are NOSUPERUSER NOREPLICATION NOBYPASSRLS (only a superuser may even name those).
    await service.query(
      rowCount
        ? `ALTER ROLE ${ident} LOGIN NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD ${secret}`
        : `CREATE ROLE ${ident} LOGIN NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD ${secret}`,
    );
    await assertConfined(service, role);
    // Settings on the role itself, whatever it may have set for itself: a session resolves unqualified names in
    // pg_catalog only. The rewriter qualifies every workspace object (user_data.…), so nothing another workspace
    // created in the shared schema can shadow a built-in function or operator (the CVE-2018-1058 pattern).
    await service.query(`ALTER ROLE ${ident} RESET ALL`);
    await service.query(`ALTER ROLE ${ident} SET search_path = pg_catalog`);
    // Existing roles get these too: this runs once per process for every workspace before its first connection.
    const { rows } = await service.query<{ name: string }>(
      `SELECT name FROM unnest($1::text[]) AS name WHERE has_parameter_privilege(name, 'SET')`,
      [Object.keys(WORKSPACE_ROLE_SETTINGS)],
    );
    for (const { name } of rows) await service.query(`ALTER ROLE ${ident} SET ${name} = '${WORKSPACE_ROLE_SETTINGS[name]}'`);
    // The service manages the workspace's tables too (embeddings, drops); membership goes this way only.
    await service.query(`GRANT ${ident} TO CURRENT_USER`);
    await service.query(`GRANT USAGE, CREATE ON SCHEMA ${USER_SCHEMA} TO ${ident}`);
    await service.query('COMMIT');
  } catch (err) {
    await service.query('ROLLBACK').catch(() => {});
    throw err;
  }
  return role;
}

/** Refuses a role that could reach further than its workspace (say, created by hand with more rights). */
async function assertConfined(service: pg.PoolClient | pg.Client, role: string): Promise<void> {
  const { rows } = await service.query(
    `SELECT r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication OR r.rolbypassrls
              OR EXISTS (SELECT 1 FROM pg_auth_members m WHERE m.member = r.oid) AS escapes
       FROM pg_roles r WHERE r.rolname = $1`,
    [role],
  );
  if (rows[0]?.escapes !== false) throw new Error(`workspace role ${role} has rights beyond its workspace; refusing to use it`);
}
