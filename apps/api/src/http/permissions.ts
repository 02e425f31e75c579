import { ServiceError, forbidden } from '@wds/errors';
import { isInGroup } from '@wds/policies';
import type { MemberCtx } from './route.js';

/**
 * Policy editing is restricted to the policy-editor group when the workspace sets one
 * (docs/sql-and-policies.md#policies).
 */
export async function assertPolicyEditor(ctx: MemberCtx): Promise<void> {
  const group = ctx.access.workspace.policy_editor_policy_group_id;
  if (group && !(await isInGroup(ctx.db, ctx.access.workspace.id, group, ctx.principal.user.id))) {
    throw forbidden('Policy editing is restricted to the policy editor group', 'see policy_editor_policy_group_id');
  }
}

/**
 * Workflow editors — the members of `workflow_editor_policy_group_id`, or the admins while it is unset — create and
 * change STFs, effects, workflows and documents. Storage editors (docs/files.md#api: file upload and delete) are the
 * same people; only the refusal names the role the caller asked for.
 */
async function assertEditor(ctx: MemberCtx, role: 'workflow' | 'storage'): Promise<void> {
  const group = ctx.access.workspace.workflow_editor_policy_group_id;
  const allowed = group
    ? await isInGroup(ctx.db, ctx.access.workspace.id, group, ctx.principal.user.id)
    : ctx.access.role === 'admin';
  if (!allowed) {
    throw forbidden(
      `This needs a ${role} editor`,
      group ? 'members of workflow_editor_policy_group_id' : 'workspace admins, while workflow_editor_policy_group_id is unset',
    );
  }
}

export const assertWorkflowEditor = (ctx: MemberCtx): Promise<void> => assertEditor(ctx, 'workflow');
export const assertStorageEditor = (ctx: MemberCtx): Promise<void> => assertEditor(ctx, 'storage');

/** Schema changes — and the embedding operations that add columns or read whole tables — need the workspace's
 * admin role or membership of `ddl_policy_group_id` (docs/sql-and-policies.md#permissions). */
export async function assertDdlAllowed(ctx: MemberCtx): Promise<void> {
  if (ctx.access.role === 'admin') return;
  const group = ctx.access.workspace.ddl_policy_group_id;
  if (group && (await isInGroup(ctx.db, ctx.access.workspace.id, group, ctx.principal.user.id))) return;
  throw new ServiceError('DDL_FORBIDDEN', 'This needs the admin role or membership of the DDL policy group', 'see ddl_policy_group_id');
}

/**
 * Explaining or reading as another member (`as_user_id`, docs/sql-and-policies.md#view-as) is for those who shape
 * access: admins, and members of `policy_editor_policy_group_id` when the workspace sets one.
 */
export async function assertMayViewAs(ctx: MemberCtx): Promise<void> {
  if (ctx.access.role === 'admin') return;
  const group = ctx.access.workspace.policy_editor_policy_group_id;
  if (group && (await isInGroup(ctx.db, ctx.access.workspace.id, group, ctx.principal.user.id))) return;
  throw forbidden('Only admins and policy editors may act as another member', 'as_user_id: workspace admins and members of policy_editor_policy_group_id');
}
