import { USER_SCHEMA, workspaceRole } from '@wds/sql-rewriter';
import type pg from 'pg';

/**
 * Each workspace has its own PostgreSQL role that owns its tables and runs its SQL. Even if the rewriter
 * let something through, that role cannot read another workspace's tables or the service schema.
 */
export async function ensureWorkspaceRole(
  client: pg.PoolClient,
  workspaceId: string,
  /** Roles known to be set up in this database (roles are per cluster, schema grants per database). */
  ensured: Set<string> = new Set(),
): Promise<string> {
  const role = workspaceRole(workspaceId);
  if (ensured.has(role)) return role;
  const ident = `"${role}"`; // [a-z0-9_] only, from a UUID
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [role]);
    const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    if (!rowCount) await client.query(`CREATE ROLE ${ident} NOLOGIN`);
    await client.query(`GRANT ${ident} TO CURRENT_USER`);
    await client.query(`GRANT USAGE, CREATE ON SCHEMA ${USER_SCHEMA} TO ${ident}`);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
  ensured.add(role);
  return role;
}
