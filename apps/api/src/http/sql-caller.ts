import { validationError } from '@wds/errors';
import type { Member } from '@wds/sql-approval';
import { resolveAccess } from '@wds/workspaces';
import type { SqlCaller, SqlLimits } from '@wds/workspace-sql';
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

/** A statement's limits: the configured ones, and over MCP at most the call's time left (PostgreSQL cancels it then). */
export function sqlLimitsOf(ctx: MemberCtx): SqlLimits {
  const { config } = ctx.services;
  const left = ctx.transport.remainingMs();
  const statementTimeoutMs = left === undefined ? config.SQL_STATEMENT_TIMEOUT_MS : Math.min(config.SQL_STATEMENT_TIMEOUT_MS, left);
  return { statementTimeoutMs, maxRows: config.SQL_MAX_ROWS };
}

/** The member as SQL approval sees them: workspace settings, role, credential and interface (docs/approvals.md). */
export function sqlMemberOf(ctx: MemberCtx): Member {
  return {
    workspace: ctx.access.workspace,
    role: ctx.access.role,
    proposer: {
      userId: ctx.principal.user.id,
      credential: ctx.principal.kind,
      apiKeyId: ctx.principal.apiKeyId,
      viaMcp: ctx.transport.name === 'mcp',
    },
    request: { requestId: ctx.requestId, transport: ctx.transport.name },
  };
}

/** The SQL caller of another member of the caller's workspace (`as_user_id`): their role, their policies. */
export async function memberCallerOf(ctx: MemberCtx, userId: string): Promise<SqlCaller> {
  const access = await resolveAccess(ctx.db, { userId, scopedWorkspaceId: null }, ctx.access.workspace.id).catch(() => {
    throw validationError('as_user_id: not a member of this workspace');
  });
  return {
    workspaceId: access.workspace.id,
    ddlGroupId: access.workspace.ddl_policy_group_id,
    isAdmin: access.role === 'admin',
    subject: { kind: 'user', userId },
  };
}
