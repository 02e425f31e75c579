import { MAX_SQL_BYTES } from '@wds/sql-rewriter';
import { validationError } from '@wds/errors';
import * as v from 'valibot';
import { autoEmbedRows } from '@wds/semantic-search';
import {
  MAX_WAIT_SECONDS,
  PROPOSAL_STATUSES,
  type ApprovalDeps,
  approveProposal,
  executeOrHold,
  findProposal,
  listVisibleProposals,
  previewAndPropose,
  proposeSql,
  rejectSqlProposal,
  toProposalView,
  visibleProposal,
  waitForChange,
} from '@wds/sql-approval';
import type { SqlResult as Result } from '@wds/workspace-sql';
import { defineRoute, type MemberCtx } from '../http/route.js';
import { Uuid, intQuery, pageEntries } from '../http/schemas.js';
import { SqlApproved, SqlExplanation, SqlPreview, SqlProposal, SqlResult } from '../http/views/index.js';
import { sqlCallerOf as callerOf, sqlLimitsOf as limitsOf, memberCallerOf, sqlMemberOf as memberOf } from '../http/sql-caller.js';
import { assertMayViewAs } from '../http/permissions.js';
import { getPolicy, getPolicyGroup, validatePolicyDraft } from '@wds/policies';
import type { DraftPolicy } from '@wds/workspace-sql';
import { DraftPolicyBody } from './policies.js';

type DraftInput = v.InferOutput<typeof DraftPolicyBody>;

// Characters here; the parser's own limit counts UTF-8 bytes (MAX_SQL_BYTES) and holds for every entry point.
const Sql = v.pipe(v.string('must be a string'), v.nonEmpty('must not be empty'), v.maxLength(MAX_SQL_BYTES));

const approvalOf = (ctx: MemberCtx): ApprovalDeps => ({
  db: ctx.db,
  sql: ctx.services.sql,
  ttlMs: ctx.services.config.SQL_PROPOSAL_TTL * 1000,
});

/** What execute answers for a statement that ran: rows of a read, the count (and RETURNING rows) of anything else. */
function rendered(r: Result) {
  if (r.kind === 'select' && r.affected_rows === undefined) return { rows: r.rows ?? [], executed_sql: r.executed_sql };
  return { affected_rows: r.affected_rows ?? 0, executed_sql: r.executed_sql, ...(r.rows ? { rows: r.rows } : {}) };
}

/** After a write: the rows it changed are embedded where the workspace embeds its tables. */
async function afterWrite(ctx: MemberCtx, r: Result): Promise<void> {
  if (r.kind !== 'select' && r.kind !== 'ddl') await autoEmbedRows(ctx.services, ctx.access.workspace, r.tables);
}

/**
 * A read as the caller and another member at once (docs/sql-and-policies.md#view-as): only rows both may read, so
 * the caller learns which of their own rows the member would see, and nothing the caller could not read.
 */
async function viewAs(ctx: MemberCtx, sql: string, userId: string, draftInput?: DraftInput): Promise<Result> {
  await assertMayViewAs(ctx);
  const member = await memberCallerOf(ctx, userId);
  const draft = draftInput ? await draftOf(ctx, draftInput) : undefined;
  const audit = {
    userId: ctx.principal.user.id,
    apiKeyId: ctx.principal.apiKeyId,
    requestId: ctx.requestId,
    transport: ctx.transport.name,
    ...(draftInput ? { details: { draft_policy: { ...draftInput, name: draft?.policy.name } } } : {}),
  };
  return ctx.services.sql.execute(callerOf(ctx), sql, limitsOf(ctx), audit, member.subject, draft);
}

/** A draft policy checked as create would check it (its group, table name, condition and columns), and its group. */
async function draftOf(ctx: MemberCtx, d: DraftInput): Promise<DraftPolicy> {
  const workspaceId = ctx.access.workspace.id;
  const name = d.name ?? 'draft';
  const condition = await validatePolicyDraft(ctx.db, workspaceId, { ...d, name });
  const group = await getPolicyGroup(ctx.db, workspaceId, d.policy_group_id as Parameters<typeof getPolicyGroup>[2]);
  // The policy it edits must be one of this workspace's (404 otherwise, as reading it would be).
  if (d.policy_id) await getPolicy(ctx.db, workspaceId, d.policy_id as Parameters<typeof getPolicy>[2]);
  return {
    policy: { id: d.policy_id ?? 'draft', name, policy_group_id: d.policy_group_id, mode: d.mode, table_name: d.table_name, operation: d.operation, condition: condition as never },
    group: { id: group.id, user_ids: group.user_ids, stf_ids: group.stf_ids },
    replaces: d.policy_id ?? null,
  };
}

const Comment = v.optional(v.nullable(v.pipe(v.string(), v.maxLength(10_000, 'must have at most 10000 characters'))));
const proposalBase = '/api/v1/workspaces/:id/sql/proposals';
const proposalCommon = { auth: 'user', workspace: 'path', role: 'member' } as const;

export const sqlRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces/:id/sql',
    operation: 'execute_sql',
    response: SqlResult,
    summary: 'Run one SQL statement on the workspace tables, with policy and DDL checks',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    body: v.object({ sql: Sql, as_user_id: v.optional(Uuid), draft_policy: v.optional(DraftPolicyBody) }),
    transaction: false,
    auditsItself: true,
    // Only DDL changes what is cached about the workspace; WorkspaceSql publishes that itself.
    invalidates: 'none',
    // Over MCP the statement's timeout is the call's time left: PostgreSQL cancels and rolls it back (audit included).
    mcp: { selfBounded: true },
    openapi: {
      responses: {
        '202': {
          description: 'Approval applies (sql_approval_mode): nothing ran, the statement waits as a stored proposal (docs/approvals.md)',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/SqlApprovalRequired' } } },
        },
      },
    },
    handler: async (ctx) => {
      if (ctx.body.as_user_id !== undefined) return rendered(await viewAs(ctx, ctx.body.sql, ctx.body.as_user_id, ctx.body.draft_policy));
      if (ctx.body.draft_policy !== undefined) throw validationError('draft_policy: previewed as a member only; give as_user_id too');
      const outcome = await executeOrHold(approvalOf(ctx), callerOf(ctx), memberOf(ctx), ctx.body.sql, limitsOf(ctx));
      if ('held' in outcome) {
        const body = { code: 'APPROVAL_REQUIRED', message: 'This statement waits for approval; nothing ran', proposal: outcome.held };
        return new Response(JSON.stringify(body), { status: 202, headers: { 'content-type': 'application/json' } });
      }
      await afterWrite(ctx, outcome.result);
      return rendered(outcome.result);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces/:id/sql/preview',
    operation: 'preview_sql',
    response: SqlPreview,
    summary:
      'The rewritten SQL without running it; policies are not evaluated unless with_policies is true. A statement that changes anything is stored as the proposal proposal_id names',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    body: v.object({ sql: Sql, with_policies: v.optional(v.boolean()) }),
    handler: (ctx) => previewAndPropose(approvalOf(ctx), callerOf(ctx), memberOf(ctx), ctx.body.sql, ctx.body.with_policies ?? false),
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces/:id/sql/explain',
    operation: 'explain_sql',
    response: SqlExplanation,
    summary:
      'Why a statement runs as it does, or is denied: per table the decision, the policies that apply and the predicate put in; with row_id, which conditions one readable row matches. Nothing runs',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    body: v.object({ sql: Sql, as_user_id: v.optional(Uuid), row_id: v.optional(v.pipe(v.string(), v.nonEmpty(), v.maxLength(200))) }),
    handler: async (ctx) => {
      if (ctx.body.as_user_id !== undefined) await assertMayViewAs(ctx);
      const caller = ctx.body.as_user_id === undefined ? callerOf(ctx) : await memberCallerOf(ctx, ctx.body.as_user_id);
      const explanation = await ctx.services.sql.explain(caller, ctx.body.sql);
      if (ctx.body.row_id === undefined) return explanation;
      const viewer = callerOf(ctx).subject;
      return { ...explanation, row: await ctx.services.sql.explainRow(caller, viewer, ctx.body.sql, ctx.body.row_id, limitsOf(ctx)) };
    },
  }),
  defineRoute({
    ...proposalCommon,
    method: 'post',
    path: proposalBase,
    operation: 'propose_sql',
    response: SqlProposal,
    status: 201,
    summary: 'Store a statement that changes something as a proposal for an approver; nothing runs (docs/approvals.md)',
    body: v.object({ sql: Sql }),
    transaction: false,
    auditsItself: true,
    invalidates: 'none',
    handler: (ctx) => proposeSql(approvalOf(ctx), callerOf(ctx), memberOf(ctx), ctx.body.sql),
  }),
  defineRoute({
    ...proposalCommon,
    method: 'get',
    path: proposalBase,
    operation: 'list_sql_proposals',
    response: v.array(SqlProposal),
    summary: "The workspace's SQL proposals, newest first (approvers see all, other members their own)",
    query: v.object({ ...pageEntries, status: v.optional(v.picklist(PROPOSAL_STATUSES)) }),
    handler: (ctx) => listVisibleProposals(ctx.db, memberOf(ctx), ctx.query),
  }),
  defineRoute({
    ...proposalCommon,
    method: 'get',
    path: `${proposalBase}/:proposalId`,
    operation: 'get_sql_proposal',
    response: SqlProposal,
    summary: 'One SQL proposal; with wait=<seconds ≤ 60>, answers once its status changes or the wait ends',
    query: v.object({ wait: intQuery(0, 0, MAX_WAIT_SECONDS, 'wait') }),
    handler: async (ctx) => {
      const member = memberOf(ctx);
      const first = await visibleProposal(ctx.db, member, ctx.params.proposalId);
      if (!ctx.query.wait) return toProposalView(first);
      const read = async () => (await findProposal(ctx.db, member.workspace.id, first.id)) ?? first;
      return toProposalView(await waitForChange(read, ctx.services.bus, first, ctx.query.wait, ctx.transport.signal));
    },
  }),
  defineRoute({
    ...proposalCommon,
    method: 'post',
    path: `${proposalBase}/:proposalId/approve`,
    operation: 'approve_sql_proposal',
    response: SqlApproved,
    summary: 'Approve a pending proposal: its statement runs once, as its proposer, under the policies in force now',
    body: v.object({ comment: Comment }),
    transaction: false,
    auditsItself: true,
    invalidates: 'none',
    mcp: { selfBounded: true },
    handler: async (ctx) => {
      const { result, proposal } = await approveProposal(approvalOf(ctx), memberOf(ctx), ctx.params.proposalId, ctx.body.comment ?? null, limitsOf(ctx));
      await afterWrite(ctx, result);
      return { ...rendered(result), proposal };
    },
  }),
  defineRoute({
    ...proposalCommon,
    method: 'post',
    path: `${proposalBase}/:proposalId/reject`,
    operation: 'reject_sql_proposal',
    response: SqlProposal,
    summary: 'Reject a pending proposal (approvers), or withdraw your own',
    body: v.object({ comment: Comment }),
    transaction: false,
    auditsItself: true,
    invalidates: 'none',
    handler: (ctx) => rejectSqlProposal(ctx.db, memberOf(ctx), ctx.params.proposalId, ctx.body.comment ?? null),
  }),
];
