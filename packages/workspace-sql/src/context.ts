import type { Policy, PolicyGroup } from '@wds/policy-engine';
import { ServiceError } from '@wds/errors';
import { type Columns, physicalName, workspacePrefix, workspaceRole } from '@wds/sql-rewriter';
import type pg from 'pg';

export interface SqlContext {
  /** Columns of the referenced tables that exist (with their types), by logical name. */
  catalog: Map<string, Columns>;
  policies: Policy[];
  groups: PolicyGroup[];
  /** Users of the workspace's DDL policy group (empty when none is set). */
  ddlUserIds: string[];
}

/** Everything the rewriter and the policy decision need, in one round trip. */
export async function loadContext(
  db: pg.Pool | pg.PoolClient,
  workspaceId: string,
  tables: string[],
  ddlGroupId: string | null,
): Promise<SqlContext> {
  const physical = tables.map((t) => physicalName(workspaceId, t));
  const { rows } = await db.query({
    // Named: each pooled connection parses and plans it once, not on every request.
    name: 'wds_load_sql_context',
    text: `SELECT
      (SELECT coalesce(json_agg(json_build_object('t', c.relname, 'c', a.attname,
              'y', CASE WHEN y.typnamespace = 'pg_catalog'::regnamespace THEN y.typname::text ELSE '' END)), '[]')
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
         JOIN pg_catalog.pg_type y ON y.oid = a.atttypid
        WHERE c.relnamespace = 'user_data'::regnamespace AND c.relname = ANY($1::text[])
          AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
      (SELECT coalesce(json_agg(c.relname), '[]') FROM pg_catalog.pg_class c
        WHERE c.relnamespace = 'user_data'::regnamespace AND c.relname = ANY($1::text[])
          AND c.relowner IS DISTINCT FROM (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = $5)) AS foreign,
      (SELECT coalesce(json_agg(json_build_object('id', p.id, 'name', p.name, 'policy_group_id', p.policy_group_id,
              'mode', p.mode, 'table_name', p.table_name, 'operation', p.operation, 'condition', p.condition)), '[]')
         FROM platform.policies p WHERE p.workspace_id = $2 AND p.table_name = ANY($3::text[])) AS policies,
      (SELECT coalesce(json_agg(json_build_object('id', g.id, 'user_ids', g.user_ids, 'stf_ids', g.stf_ids)), '[]')
         FROM platform.policy_groups g
        WHERE g.workspace_id = $2
          AND g.id IN (SELECT policy_group_id FROM platform.policies WHERE workspace_id = $2 AND table_name = ANY($3::text[]))) AS groups,
      (SELECT g.user_ids FROM platform.policy_groups g WHERE g.id = $4 AND g.workspace_id = $2) AS ddl_user_ids`,
    values: [physical, workspaceId, tables, ddlGroupId, workspaceRole(workspaceId)],
  });
  const row = rows[0];
  const prefix = workspacePrefix(workspaceId);
  if (row.foreign.length > 0) {
    // Only possible if something bypassed the rewriter elsewhere and squatted this workspace's name: never use it.
    const logical = (row.foreign as string[]).map((t) => t.slice(prefix.length)).join(', ');
    throw new ServiceError('EXECUTION_ERROR', `Table ${logical} is not owned by this workspace`, 'ask the operator to remove it');
  }
  const catalog = new Map<string, Map<string, string>>();
  for (const { t, c, y } of row.columns as { t: string; c: string; y: string }[]) {
    const logical = t.slice(prefix.length);
    const columns = catalog.get(logical) ?? new Map<string, string>();
    columns.set(c, y);
    catalog.set(logical, columns);
  }
  return { catalog, policies: row.policies, groups: row.groups, ddlUserIds: row.ddl_user_ids ?? [] };
}
