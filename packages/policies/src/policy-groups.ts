import { type Db, type PolicyGroupRow, newId, sql, type Uuid } from '@wds/db';
import { conflict, notFound } from '@wds/errors';
import type { PolicyGroupView } from './views.js';

const toView = (g: PolicyGroupRow): PolicyGroupView => ({
  id: g.id,
  workspace_id: g.workspace_id,
  name: g.name,
  user_ids: g.user_ids,
  stf_ids: g.stf_ids,
  created_at: g.created_at.toISOString(),
  updated_at: g.updated_at.toISOString(),
});

export interface PolicyGroupInput {
  name: string;
  user_ids: string[];
  stf_ids: string[];
}

const unique = (ids: string[]) => [...new Set(ids.map((s) => s.toLowerCase()))];

export async function listPolicyGroups(db: Db, workspaceId: string, page: { limit: number; offset: number }) {
  const rows = await db
    .selectFrom('platform.policy_groups')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(toView);
}

async function find(db: Db, workspaceId: string, id: Uuid): Promise<PolicyGroupRow> {
  const row = await db
    .selectFrom('platform.policy_groups')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound('Policy group');
  return row;
}

export const getPolicyGroup = async (db: Db, workspaceId: string, id: Uuid) => toView(await find(db, workspaceId, id));

export async function createPolicyGroup(db: Db, workspaceId: string, input: PolicyGroupInput): Promise<PolicyGroupView> {
  const row = await db
    .insertInto('platform.policy_groups')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      name: input.name,
      user_ids: unique(input.user_ids),
      stf_ids: unique(input.stf_ids),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

/** PATCH replaces user_ids and stf_ids entirely when they are given. */
export async function updatePolicyGroup(
  db: Db,
  workspaceId: string,
  id: Uuid,
  patch: Partial<PolicyGroupInput>,
): Promise<PolicyGroupView> {
  await find(db, workspaceId, id);
  const row = await db
    .updateTable('platform.policy_groups')
    .set({
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.user_ids !== undefined ? { user_ids: unique(patch.user_ids) } : {}),
      ...(patch.stf_ids !== undefined ? { stf_ids: unique(patch.stf_ids) } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

/**
 * A group still used by policies or by a workspace setting cannot be deleted: silently dropping a deny policy,
 * or the policy-editor restriction, would widen access.
 */
export async function deletePolicyGroup(db: Db, workspaceId: string, id: Uuid): Promise<PolicyGroupView> {
  const group = await find(db, workspaceId, id);
  const used = await db
    .selectFrom('platform.policies')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('policy_group_id', '=', id)
    .executeTakeFirstOrThrow();
  if (used.n > 0) throw conflict('The policy group is used by policies', `${used.n} policies; delete or move them first`);
  const ws = await db.selectFrom('platform.workspaces').selectAll().where('id', '=', workspaceId).executeTakeFirstOrThrow();
  const settings = (['ddl_policy_group_id', 'workflow_editor_policy_group_id', 'policy_editor_policy_group_id', 'sql_approver_policy_group_id'] as const).filter(
    (f) => ws[f] === id,
  );
  if (settings.length) throw conflict('The policy group is used by workspace settings', settings.join(', '));
  await db.deleteFrom('platform.policy_groups').where('id', '=', id).execute();
  return toView(group);
}

/** Whether a user belongs to a group of the workspace (false when the group id is null or unknown). */
export async function isInGroup(db: Db, workspaceId: string, groupId: string | null, userId: string): Promise<boolean> {
  if (!groupId) return false;
  const row = await db
    .selectFrom('platform.policy_groups')
    .select('id')
    .where('id', '=', groupId)
    .where('workspace_id', '=', workspaceId)
    .where(sql<boolean>`${userId}::uuid = ANY(user_ids)`)
    .executeTakeFirst();
  return row !== undefined;
}
