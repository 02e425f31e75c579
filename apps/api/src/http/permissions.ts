import { forbidden } from '@wds/errors';
import { isInGroup } from '@wds/policies';
import type { HandlerCtx } from './route.js';

/** Policy editing is restricted to the policy-editor group when the workspace sets one (spec §4.13). */
export async function assertPolicyEditor(ctx: HandlerCtx<unknown, unknown>): Promise<void> {
  const group = ctx.access.workspace.policy_editor_policy_group_id;
  if (group && !(await isInGroup(ctx.db, ctx.access.workspace.id, group, ctx.principal.user.id))) {
    throw forbidden('Policy editing is restricted to the policy editor group', 'see policy_editor_policy_group_id');
  }
}

/**
 * Workflow editors (members of `workflow_editor_policy_group_id`, or the admins while it is unset) create and change
 * STFs, effects and workflows, and upload or delete files.
 */
export async function assertWorkflowEditor(ctx: HandlerCtx<unknown, unknown>): Promise<void> {
  const group = ctx.access.workspace.workflow_editor_policy_group_id;
  const allowed = group
    ? await isInGroup(ctx.db, ctx.access.workspace.id, group, ctx.principal.user.id)
    : ctx.access.role === 'admin';
  if (!allowed) {
    throw forbidden(
      'This needs a workflow editor',
      group ? 'members of workflow_editor_policy_group_id' : 'workspace admins, while workflow_editor_policy_group_id is unset',
    );
  }
}

/**
 * Storage editors (spec §4.6: file upload and delete) are the same people as workflow editors: the members of
 * `workflow_editor_policy_group_id`, or the workspace admins while it is unset.
 */
export async function assertStorageEditor(ctx: HandlerCtx<unknown, unknown>): Promise<void> {
  const group = ctx.access.workspace.workflow_editor_policy_group_id;
  const allowed = group
    ? await isInGroup(ctx.db, ctx.access.workspace.id, group, ctx.principal.user.id)
    : ctx.access.role === 'admin';
  if (!allowed) {
    throw forbidden(
      'This needs a storage editor',
      group ? 'members of workflow_editor_policy_group_id' : 'workspace admins, while workflow_editor_policy_group_id is unset',
    );
  }
}
