import { type Db, type Role, type SqlApprovalAppliesTo, type SqlApprovalMode, type Workspace, isUuid, newId } from '@wds/db';
import { forbidden, notFound, validationError } from '@wds/errors';
import { type WorkspaceView, type WorkspaceWithRoleView, toWorkspaceView } from './views.js';

export interface Page {
  limit: number;
  offset: number;
}

export interface WorkspaceAccess {
  workspace: Workspace;
  role: Role;
}

/** The caller's view of one workspace: 404 when it does not exist (or is deleted), 403 when not a member. */
export async function resolveAccess(
  db: Db,
  who: { userId: string; scopedWorkspaceId: string | null },
  workspaceId: string,
): Promise<WorkspaceAccess> {
  if (!isUuid(workspaceId)) throw notFound('Workspace');
  // One round trip: the workspace and the caller's membership of it.
  const row = await db
    .selectFrom('platform.workspaces as w')
    .leftJoin('platform.memberships as m', (j) => j.onRef('m.workspace_id', '=', 'w.id').on('m.user_id', '=', who.userId))
    .selectAll('w')
    .select('m.role')
    .where('w.id', '=', workspaceId)
    .where('w.deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw notFound('Workspace');
  if (who.scopedWorkspaceId !== null && who.scopedWorkspaceId !== workspaceId) {
    throw forbidden('This token is scoped to another workspace');
  }
  const { role, ...workspace } = row;
  if (!role) throw forbidden('You are not a member of this workspace');
  return { workspace, role };
}

/**
 * A workspace that exists and is not deleted, or undefined — without asking who wants it. For callers that are
 * not members (anonymous workflow execution), which decide themselves what a missing workspace means.
 */
export async function findLiveWorkspace(db: Db, workspaceId: string): Promise<Workspace | undefined> {
  if (!isUuid(workspaceId)) return undefined;
  return db
    .selectFrom('platform.workspaces')
    .selectAll()
    .where('id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function listWorkspaces(
  db: Db,
  who: { userId: string; scopedWorkspaceId: string | null },
  page: Page,
): Promise<WorkspaceWithRoleView[]> {
  let q = db
    .selectFrom('platform.workspaces as w')
    .innerJoin('platform.memberships as m', 'm.workspace_id', 'w.id')
    .selectAll('w')
    .select('m.role')
    .where('m.user_id', '=', who.userId)
    .where('w.deleted_at', 'is', null);
  if (who.scopedWorkspaceId !== null) q = q.where('w.id', '=', who.scopedWorkspaceId);
  const rows = await q.orderBy('w.id').limit(page.limit).offset(page.offset).execute();
  return rows.map((r) => ({ ...toWorkspaceView(r), role: r.role }));
}

/**
 * The creator becomes the workspace's first admin, in the same transaction. A user may have created at most
 * `maxPerUser` workspaces that are not deleted (MAX_WORKSPACES_PER_USER; 0: no limit): one more is 403 FORBIDDEN.
 * The creator is whose share of the service a workspace's load takes (@wds/workspace-sql workspacePrincipal), and
 * the quota bounds what else one person multiplies by creating workspaces. Creations of one user are serialised
 * (a lock on their user row), so concurrent requests cannot pass the count together.
 */
export async function createWorkspace(db: Db, input: { name: string; createdBy: string; maxPerUser?: number }): Promise<WorkspaceView> {
  const id = newId();
  // The routes' mutations already run in a transaction: the lock then lasts until their commit.
  const inTransaction = (run: (trx: Db) => Promise<WorkspaceView>) => (db.isTransaction ? run(db) : db.transaction().execute(run));
  return inTransaction(async (trx) => {
    const max = input.maxPerUser ?? 0;
    if (max > 0) {
      await trx.selectFrom('platform.users').select('id').where('id', '=', input.createdBy).forUpdate().execute();
      const { n } = await trx
        .selectFrom('platform.workspaces')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('created_by', '=', input.createdBy)
        .where('deleted_at', 'is', null)
        .executeTakeFirstOrThrow();
      if (Number(n) >= max) {
        throw forbidden(
          `You have created ${max} workspaces, the most one user may have`,
          'MAX_WORKSPACES_PER_USER; delete one of them to create another',
        );
      }
    }
    const ws = await trx
      .insertInto('platform.workspaces')
      .values({ id, name: input.name, created_by: input.createdBy })
      .returningAll()
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('platform.memberships')
      .values({ id: newId(), workspace_id: id, user_id: input.createdBy, role: 'admin' })
      .execute();
    return toWorkspaceView(ws);
  });
}

export interface WorkspacePatch {
  name?: string | undefined;
  ddl_policy_group_id?: string | null | undefined;
  workflow_editor_policy_group_id?: string | null | undefined;
  policy_editor_policy_group_id?: string | null | undefined;
  mcp_timeout_ms?: number | undefined;
  custom_prompt?: string | undefined;
  auto_embed_files?: boolean | undefined;
  auto_embed_tables?: boolean | undefined;
  sql_approval_mode?: SqlApprovalMode | undefined;
  sql_approval_applies_to?: SqlApprovalAppliesTo | undefined;
  sql_approver_policy_group_id?: string | null | undefined;
  sql_self_approval?: boolean | undefined;
}

const GROUP_FIELDS = ['ddl_policy_group_id', 'workflow_editor_policy_group_id', 'policy_editor_policy_group_id', 'sql_approver_policy_group_id'] as const;

export async function updateWorkspace(db: Db, workspaceId: string, patch: WorkspacePatch): Promise<WorkspaceView> {
  for (const field of GROUP_FIELDS) {
    const groupId = patch[field];
    if (groupId === undefined || groupId === null) continue;
    const found = isUuid(groupId)
      ? await db
          .selectFrom('platform.policy_groups')
          .select('id')
          .where('id', '=', groupId)
          .where('workspace_id', '=', workspaceId)
          .executeTakeFirst()
      : undefined;
    if (!found) throw validationError(`${field}: no policy group with this id in this workspace`);
  }
  const values = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  const ws = await db
    .updateTable('platform.workspaces')
    .set({ ...values, updated_at: new Date() })
    .where('id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!ws) throw notFound('Workspace');
  return toWorkspaceView(ws);
}

export async function softDeleteWorkspace(db: Db, workspaceId: string): Promise<void> {
  const r = await db
    .updateTable('platform.workspaces')
    .set({ deleted_at: new Date() })
    .where('id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (r.numUpdatedRows === 0n) throw notFound('Workspace');
}
