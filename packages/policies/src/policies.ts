import { type Db, type PolicyRow, isUuid, newId, sql, type Uuid } from '@wds/db';
import { notFound, validationError } from '@wds/errors';
import { type Operation, type PolicyMode, conditionColumns, parseCondition } from '@wds/policy-engine';
import { isLogicalName, physicalName } from '@wds/sql-rewriter';
import type { PolicyView } from './views.js';

const toView = (p: PolicyRow): PolicyView => ({
  id: p.id,
  workspace_id: p.workspace_id,
  name: p.name,
  policy_group_id: p.policy_group_id,
  mode: p.mode,
  table_name: p.table_name,
  operation: p.operation,
  condition: p.condition ?? null,
  created_at: p.created_at.toISOString(),
  updated_at: p.updated_at.toISOString(),
});

export interface PolicyInput {
  name: string;
  policy_group_id: string;
  mode: PolicyMode;
  table_name: string;
  operation: Operation;
  condition?: unknown;
}

/** Validates a policy against the workspace: its group, its table name, its condition and the table's columns. */
async function validate(db: Db, workspaceId: string, p: PolicyInput): Promise<string | null> {
  if (!isLogicalName(p.table_name)) {
    throw validationError('table_name: a lower-case identifier of at most 23 characters');
  }
  const group = isUuid(p.policy_group_id)
    ? await db
        .selectFrom('platform.policy_groups')
        .select('id')
        .where('id', '=', p.policy_group_id)
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst()
    : undefined;
  if (!group) throw validationError('policy_group_id: no policy group with this id in this workspace');
  if (p.condition === undefined || p.condition === null) return null;
  const condition = parseCondition(p.condition);
  const { rows } = await sql<{ attname: string }>`
    SELECT a.attname FROM pg_catalog.pg_attribute a
    WHERE a.attrelid = to_regclass(${`user_data.${physicalName(workspaceId, p.table_name)}`})
      AND a.attnum > 0 AND NOT a.attisdropped`.execute(db);
  if (rows.length > 0) {
    const columns = new Set(rows.map((r) => r.attname));
    const unknown = conditionColumns(condition).filter((c) => !columns.has(c));
    if (unknown.length) {
      throw validationError(`condition: unknown column${unknown.length > 1 ? 's' : ''} of table ${p.table_name}: ${unknown.join(', ')}`);
    }
  }
  // Stored as the user wrote it (it was validated above), so reads return what was sent.
  return JSON.stringify(p.condition);
}

/**
 * Checks a policy that is not saved (a draft previewed with view-as) exactly as create would, and answers it as the
 * policy engine takes it: the condition as written, or null.
 */
export async function validatePolicyDraft(db: Db, workspaceId: string, input: PolicyInput): Promise<unknown> {
  const condition = await validate(db, workspaceId, input);
  return condition === null ? null : JSON.parse(condition);
}

export async function listPolicies(db: Db, workspaceId: string, page: { limit: number; offset: number }) {
  const rows = await db
    .selectFrom('platform.policies')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(toView);
}

async function find(db: Db, workspaceId: string, id: Uuid): Promise<PolicyRow> {
  const row = await db
    .selectFrom('platform.policies')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound('Policy');
  return row;
}

export const getPolicy = async (db: Db, workspaceId: string, id: Uuid) => toView(await find(db, workspaceId, id));

export async function createPolicy(db: Db, workspaceId: string, input: PolicyInput): Promise<PolicyView> {
  const condition = await validate(db, workspaceId, input);
  const row = await db
    .insertInto('platform.policies')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      name: input.name,
      policy_group_id: input.policy_group_id,
      mode: input.mode,
      table_name: input.table_name,
      operation: input.operation,
      condition,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

export async function updatePolicy(db: Db, workspaceId: string, id: Uuid, patch: Partial<PolicyInput>): Promise<PolicyView> {
  const current = toView(await find(db, workspaceId, id));
  const merged: PolicyInput = { ...current, ...patch };
  if (!('condition' in patch)) merged.condition = current.condition;
  const condition = await validate(db, workspaceId, merged);
  const row = await db
    .updateTable('platform.policies')
    .set({
      name: merged.name,
      policy_group_id: merged.policy_group_id,
      mode: merged.mode,
      table_name: merged.table_name,
      operation: merged.operation,
      condition,
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

export async function deletePolicy(db: Db, workspaceId: string, id: Uuid): Promise<PolicyView> {
  const p = await find(db, workspaceId, id);
  await db.deleteFrom('platform.policies').where('id', '=', id).execute();
  return toView(p);
}
