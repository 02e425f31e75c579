import type { Db, Role, SqlProposalRow, Uuid, Workspace } from '@wds/db';
import { ServiceError, badRequest, forbidden, notFound } from '@wds/errors';
import { isInGroup } from '@wds/policies';
import type { PreviewResult, SqlCaller, SqlLimits, SqlResult, WorkspaceSql } from '@wds/workspace-sql';
import { type Proposer, changes, needsApproval } from './modes.js';
import {
  type Decision,
  type Outcome,
  type ProposalFilter,
  type RequestInfo,
  claimForApproval,
  finishApproved,
  findProposal,
  listProposals,
  rejectProposal,
  storeProposal,
} from './proposals.js';
import { type SqlProposalView, toProposalView } from './views.js';

/** What the approval operations need of the service. */
export interface ApprovalDeps {
  db: Db;
  sql: WorkspaceSql;
  /** How long a proposal waits for a decision (SQL_PROPOSAL_TTL). */
  ttlMs: number;
}

/** The member who calls: their workspace (with its approval settings), role and credential. */
export interface Member {
  workspace: Workspace;
  role: Role;
  proposer: Proposer;
  request: RequestInfo;
}

/**
 * Whether a member decides on others' proposals (docs/approvals.md#modes): the workspace's admins, and the
 * members of `sql_approver_policy_group_id`.
 */
export async function isApprover(db: Db, m: Pick<Member, 'workspace' | 'role' | 'proposer'>): Promise<boolean> {
  return approves(m.role, () => isInGroup(db, m.workspace.id, m.workspace.sql_approver_policy_group_id, m.proposer.userId));
}

/** The rule itself: an admin, or a member of the approver group (asked only for a member who is no admin). */
async function approves(role: Role, inApproverGroup: () => boolean | Promise<boolean>): Promise<boolean> {
  return role === 'admin' || (await inApproverGroup());
}

/** A preview that, for a statement that changes anything, stores the proposal its `proposal_id` names. */
export async function previewAndPropose(deps: ApprovalDeps, caller: SqlCaller, m: Member, text: string, withPolicies: boolean): Promise<PreviewResult> {
  const preview = await deps.sql.preview(caller, text, withPolicies);
  if (!preview.requires_approval) return preview;
  await storeProposal(deps.db, proposalOf(preview, m, deps.ttlMs), m.request);
  return preview;
}

const proposalOf = (p: PreviewResult, m: Member, ttlMs: number) => ({
  id: p.proposal_id,
  workspaceId: m.workspace.id,
  proposer: m.proposer,
  originalSql: p.original_sql,
  transformedSql: p.transformed_sql,
  operation: p.operation,
  tables: p.affected_tables,
  ttlMs,
});

/** Stores a proposal of a statement that changes something (a read needs none: 400). */
export async function proposeSql(deps: ApprovalDeps, caller: SqlCaller, m: Member, text: string): Promise<SqlProposalView> {
  const preview = await deps.sql.preview(caller, text, false);
  if (!preview.requires_approval) throw badRequest('A statement that changes nothing needs no approval', 'run it with POST …/sql');
  return storeProposal(deps.db, proposalOf(preview, m, deps.ttlMs), m.request);
}

/** What execute answers: the statement's result, or (where approval applies) the proposal it now waits as. */
export type ExecuteOrHeld = { result: SqlResult } | { held: SqlProposalView };

/**
 * Runs a statement, unless the workspace's approval settings hold it for a person: then it is stored as a proposal
 * and nothing runs (docs/approvals.md#modes). With `sql_approval_mode` `none` (the default) this is execute.
 */
export async function executeOrHold(
  deps: ApprovalDeps,
  caller: SqlCaller,
  m: Member,
  text: string,
  limits: SqlLimits,
): Promise<ExecuteOrHeld> {
  const audit = { userId: m.proposer.userId, apiKeyId: m.proposer.apiKeyId, requestId: m.request.requestId, transport: m.request.transport };
  if (m.workspace.sql_approval_mode === 'none') return { result: await deps.sql.execute(caller, text, limits, audit) };
  // The analysis tells what kind of statement it is; a read or a statement of a kind the mode lets through runs.
  const preview = await deps.sql.preview(caller, text, false);
  const nature = { operation: preview.operation, writes: preview.requires_approval };
  if (!changes(nature) || !needsApproval(m.workspace, nature, m.proposer)) {
    return { result: await deps.sql.execute(caller, text, limits, audit) };
  }
  return { held: await storeProposal(deps.db, proposalOf(preview, m, deps.ttlMs), m.request) };
}

/** A proposal the member may see: approvers see every one of the workspace, anyone else only their own (404). */
export async function visibleProposal(db: Db, m: Member, id: string): Promise<SqlProposalRow> {
  const row = await findProposal(db, m.workspace.id, id);
  if (!row || (row.proposed_by !== m.proposer.userId && !(await isApprover(db, m)))) throw notFound('SQL proposal');
  return row;
}

export async function listVisibleProposals(db: Db, m: Member, f: Omit<ProposalFilter, 'proposedBy'>): Promise<SqlProposalView[]> {
  return listProposals(db, m.workspace.id, { ...f, proposedBy: (await isApprover(db, m)) ? undefined : m.proposer.userId });
}

/**
 * Who may decide: an approver, and never on their own proposal unless `sql_self_approval` is on. A member who sees
 * the proposal but may not decide gets 403; one who may not see it, 404.
 */
async function checkDecider(db: Db, m: Member, row: SqlProposalRow, verb: 'approve' | 'reject'): Promise<void> {
  if (!(await isApprover(db, m))) {
    throw forbidden(`Only approvers may ${verb} SQL proposals`, 'workspace admins and members of sql_approver_policy_group_id');
  }
  if (row.proposed_by === m.proposer.userId && !m.workspace.sql_self_approval) {
    throw forbidden(`You cannot ${verb} your own proposal`, 'another approver must decide (sql_self_approval is false)');
  }
}

export interface Approved {
  result: SqlResult;
  proposal: SqlProposalView;
}

/**
 * Approves a pending proposal and runs exactly its statement once, as its proposer, under the policies and rights in
 * force now (docs/approvals.md#approval). A statement that fails — denied by a policy changed since, a proposer who
 * lost the right or the membership, a table that changed so that the statement no longer reads as it was shown —
 * ends the proposal `failed` with the error's code, and the approval answers that error.
 */
export async function approveProposal(deps: ApprovalDeps, m: Member, id: Uuid, comment: string | null, limits: SqlLimits): Promise<Approved> {
  const row = await visibleProposal(deps.db, m, id);
  await checkDecider(deps.db, m, row, 'approve');
  const approver = { userId: m.proposer.userId, apiKeyId: m.proposer.apiKeyId };
  const claimed = await claimForApproval(deps.db, m.workspace.id, id, { approver, comment });
  let result: SqlResult;
  try {
    result = await runAsProposer(deps, m.workspace, claimed, approver, m.request, limits);
  } catch (err) {
    const failure: Outcome = {
      failed: err instanceof ServiceError ? { code: err.code, message: err.message } : { code: 'INTERNAL_ERROR', message: 'The statement could not be run' },
    };
    await finishApproved(deps.db, claimed, failure, approver, m.request);
    throw err;
  }
  const proposal = await finishApproved(
    deps.db,
    claimed,
    { executed: { affectedRows: result.affected_rows ?? null, executedSql: result.executed_sql } },
    approver,
    m.request,
  );
  return { result, proposal };
}

/** The proposer's rights now: their membership and role, the workspace's DDL group. */
async function runAsProposer(
  deps: ApprovalDeps,
  workspace: Workspace,
  p: SqlProposalRow,
  approver: Decision['approver'],
  request: RequestInfo,
  limits: SqlLimits,
): Promise<SqlResult> {
  const membership = await deps.db
    .selectFrom('platform.memberships')
    .select('role')
    .where('workspace_id', '=', workspace.id)
    .where('user_id', '=', p.proposed_by)
    .executeTakeFirst();
  if (!membership) throw forbidden('The proposer is no longer a member of this workspace');
  const caller: SqlCaller = {
    workspaceId: workspace.id,
    ddlGroupId: workspace.ddl_policy_group_id,
    isAdmin: membership.role === 'admin',
    subject: { kind: 'user', userId: p.proposed_by },
  };
  // What the approver was shown is the statement as rewritten then: if the tables it names changed so that it
  // rewrites differently now, it is not the statement they approved.
  const now = await deps.sql.preview(caller, p.original_sql, false);
  if (now.transformed_sql !== p.transformed_sql) {
    throw new ServiceError('CONFLICT', 'The statement no longer reads as it did when it was proposed', 'the tables it names changed; propose it again');
  }
  return deps.sql.execute(caller, p.original_sql, limits, {
    userId: p.proposed_by,
    apiKeyId: p.api_key_id,
    requestId: request.requestId,
    transport: request.transport,
    details: { proposal_id: p.id, approved_by: approver.userId },
  });
}

/** Rejects a pending proposal: approvers (not their own, unless self-approval), or its proposer withdrawing it. */
export async function rejectSqlProposal(db: Db, m: Member, id: Uuid, comment: string | null): Promise<SqlProposalView> {
  const row = await visibleProposal(db, m, id);
  if (row.proposed_by !== m.proposer.userId) await checkDecider(db, m, row, 'reject');
  return rejectProposal(db, m.workspace.id, id, { approver: { userId: m.proposer.userId, apiKeyId: m.proposer.apiKeyId }, comment }, m.request);
}

/** What approvers are told of a new proposal over `/ws`: enough to find it, not its text. */
export interface ProposalNotice {
  proposal_id: string;
  operation: string;
  affected_tables: string[];
  proposed_by: string;
  created_at: string;
  expires_at: string;
}

/**
 * Which of `userIds` may decide on a new proposal (docs/approvals.md#modes: approvers, the proposer only with
 * self-approval), and the notice they get; undefined for a proposal that is gone or no longer pending.
 */
export async function proposalNotice(
  db: Db,
  workspaceId: string,
  id: string,
  userIds: string[],
): Promise<{ notice: ProposalNotice; recipients: Set<string> } | undefined> {
  const row = await findProposal(db, workspaceId, id);
  if (!row || toProposalView(row).status !== 'pending' || userIds.length === 0) return undefined;
  const ws = await db.selectFrom('platform.workspaces').selectAll().where('id', '=', workspaceId).where('deleted_at', 'is', null).executeTakeFirst();
  if (!ws) return undefined;
  const members = await db.selectFrom('platform.memberships').select(['user_id', 'role']).where('workspace_id', '=', workspaceId).where('user_id', 'in', userIds).execute();
  const group = ws.sql_approver_policy_group_id
    ? await db.selectFrom('platform.policy_groups').select('user_ids').where('id', '=', ws.sql_approver_policy_group_id).executeTakeFirst()
    : undefined;
  const inGroup = new Set(group?.user_ids ?? []);
  const recipients = new Set<string>();
  for (const m of members) {
    if (m.user_id === row.proposed_by && !ws.sql_self_approval) continue;
    if (await approves(m.role, () => inGroup.has(m.user_id))) recipients.add(m.user_id);
  }
  const notice = {
    proposal_id: row.id,
    operation: row.operation,
    affected_tables: row.affected_tables,
    proposed_by: row.proposed_by,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
  };
  return { notice, recipients };
}

export { toProposalView };
