import type { SqlCaller } from '@wds/workspace-sql';
import type { MemberCtx } from './route.js';

/** The caller of workspace SQL for a signed-in user: their policies, and DDL when admin or in the DDL group. */
export function sqlCallerOf(ctx: MemberCtx): SqlCaller {
  return {
    workspaceId: ctx.access.workspace.id,
    ddlGroupId: ctx.access.workspace.ddl_policy_group_id,
    isAdmin: ctx.access.role === 'admin',
    subject: { kind: 'user', userId: ctx.principal.user.id },
  };
}
