import { ServiceError } from '@wds/errors';
import {
  type Condition,
  type ConditionValue,
  type Filter,
  type Operation,
  type Subject,
  compileFilter,
  conditionFilterOf,
  decide,
  describeDenial,
  matchingPolicies,
} from '@wds/policy-engine';
import { type StatementKind, printExpression } from '@wds/sql-rewriter';
import type { SqlContext } from './context.js';
import type { Decisions, StatementSummary } from './statement.js';

/** A policy that applies to the subject, with its condition as the SQL it stands for (null: every row). */
export interface PolicyExplanation {
  id: string;
  name: string;
  policy_group_id: string;
  mode: 'allow' | 'deny';
  condition: Condition | null;
  predicate: string | null;
}

/** One (table, operation) of the statement: what the policies decided for the subject, and why. */
export interface AccessExplanation {
  table: string;
  operation: Operation;
  /** `allow` (with `predicate`), `deny` (an unconditional deny policy matched) or `default_deny` (no allow applies). */
  decision: 'allow' | 'deny' | 'default_deny';
  /** Every allow and deny policy of this table and operation whose group holds the subject, in the order decided. */
  policies: PolicyExplanation[];
  /** The deny policy that decided a `deny`. */
  denied_by: string | null;
  /** What the rewriter puts into the statement for this table (null: every row, or nothing: denied). */
  predicate: string | null;
  /** The POLICY_DENIED details a statement gets for it. */
  denial: string | null;
}

export interface StatementExplanation {
  /** Whose policies: the user explained. */
  user_id: string;
  operation: StatementKind;
  /** For a schema change: whether the user may run it (admins and the DDL group); null for any other statement. */
  ddl_allowed: boolean | null;
  access: AccessExplanation[];
  /** The statement as it runs for the user, or null when a policy denies it (`denied` says why). */
  transformed_sql: string | null;
  denied: string | null;
}

/** A filter with the subject's `$user_id` bound to their id: two subjects' filters can then be combined. */
export function bindUser(filter: Filter | null, userId: string): Filter | null {
  if (filter === null) return null;
  const bind = (v: ConditionValue): ConditionValue => (typeof v === 'object' ? userId : v);
  switch (filter.kind) {
    case 'and':
    case 'or':
      return { kind: filter.kind, args: filter.args.map((f) => bindUser(f, userId) as Filter) };
    case 'not':
      return { kind: 'not', arg: bindUser(filter.arg, userId) as Filter };
    case 'compare':
      return { ...filter, value: bind(filter.value) };
    case 'in':
      return { ...filter, values: filter.values.map(bind) };
    case 'null':
      return filter;
  }
}

/** Both filters (null: every row). */
export const both = (a: Filter | null, b: Filter | null): Filter | null => (a === null ? b : b === null ? a : { kind: 'and', args: [a, b] });

const userOf = (s: Subject): string | null => s.userId;
const printed = (filter: Filter | null, userId: string | null): string | null => (filter === null ? null : printExpression(compileFilter(filter, { userId })));

/**
 * What the policies decide for each (table, operation) the statement needs, and the policies behind it; with the
 * decisions the rewriter takes when every one allows (undefined when one denies).
 */
export function explainAccess(
  access: StatementSummary['access'],
  ctx: Pick<SqlContext, 'policies' | 'groups'>,
  subject: Subject,
): { access: AccessExplanation[]; decisions: Decisions | undefined } {
  const decisions: Decisions = {};
  let allowed = true;
  const explained = access.map(({ table, operation }): AccessExplanation => {
    const input = { policies: ctx.policies, groups: ctx.groups, subject, table, operation };
    const d = decide(input);
    const policies = matchingPolicies(input).map((p) => ({
      id: p.id,
      name: p.name,
      policy_group_id: p.policy_group_id,
      mode: p.mode,
      condition: p.condition,
      predicate: printed(conditionFilterOf(p.condition), userOf(subject)),
    }));
    if (d.allowed) {
      decisions[`${table}:${operation}`] = d.filter;
      return { table, operation, decision: 'allow', policies, denied_by: null, predicate: printed(d.filter, userOf(subject)), denial: null };
    }
    allowed = false;
    return {
      table,
      operation,
      decision: d.reason === 'deny_matched' ? 'deny' : 'default_deny',
      policies,
      denied_by: d.reason === 'deny_matched' ? d.policy : null,
      predicate: null,
      denial: describeDenial(d, table, operation),
    };
  });
  return { access: explained, decisions: allowed ? decisions : undefined };
}

/**
 * The decisions of a read seen as `viewer` and `member` at once: a row passes only if it passes both. The member's
 * side is decided over `memberCtx` (the policies with a draft in them, for a preview before saving).
 */
export function viewAsDecisions(
  access: StatementSummary['access'],
  ctx: Pick<SqlContext, 'policies' | 'groups'>,
  viewer: Subject,
  member: Subject,
  memberCtx: Pick<SqlContext, 'policies' | 'groups'> = ctx,
): Decisions {
  const decisions: Decisions = {};
  for (const { table, operation } of access) {
    const mine = decide({ policies: ctx.policies, groups: ctx.groups, subject: viewer, table, operation });
    if (!mine.allowed) throw new ServiceError('POLICY_DENIED', 'Denied by policy', describeDenial(mine, table, operation));
    const theirs = decide({ policies: memberCtx.policies, groups: memberCtx.groups, subject: member, table, operation });
    if (!theirs.allowed) throw new ServiceError('POLICY_DENIED', 'Denied by policy for the member viewed as', `as user ${member.userId}: ${describeDenial(theirs, table, operation)}`);
    const viewerId = userOf(viewer);
    const memberId = userOf(member);
    const a = viewerId === null ? mine.filter : bindUser(mine.filter, viewerId);
    const b = memberId === null ? theirs.filter : bindUser(theirs.filter, memberId);
    decisions[`${table}:${operation}`] = both(a, b);
  }
  return decisions;
}
