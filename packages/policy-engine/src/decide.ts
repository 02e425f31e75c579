import { parseCondition } from './condition.js';
import type { CompareOperator, Condition, Decision, Denial, Filter, Operation, Policy, PolicyGroup, Subject } from './types.js';

export interface DecideInput {
  policies: readonly Policy[];
  groups: readonly PolicyGroup[];
  subject: Subject;
  table: string;
  operation: Operation;
}

const COMPARE: readonly CompareOperator[] = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'];

// An STF is its own identity: the user who ran the workflow does not lend it their groups.
const inGroup = (g: PolicyGroup | undefined, s: Subject): boolean =>
  g !== undefined && (s.kind === 'user' ? g.user_ids.includes(s.userId) : g.stf_ids.includes(s.stfId));

const join = (kind: 'and' | 'or', args: Filter[]): Filter => (args.length === 1 ? args[0]! : { kind, args });

function toFilter(c: Condition): Filter {
  const parts: Filter[] = [];
  for (const [column, f] of Object.entries(c)) {
    for (const op of COMPARE) if (f[op] !== undefined) parts.push({ kind: 'compare', column, op, value: f[op] });
    if (f.$in !== undefined) parts.push({ kind: 'in', column, values: f.$in });
    if (f.$null !== undefined) parts.push({ kind: 'null', column, isNull: f.$null });
  }
  return join('and', parts);
}

/**
 * docs/sql-and-policies.md#policies. A policy matches when its table and operation are the request's and its group
 * holds the subject. Any matching deny without a condition → denied; no matching allow → denied; otherwise the row
 * filter is (OR of allow conditions) AND NOT (OR of deny conditions), with null standing for TRUE.
 * Conditions are re-normalised here, so rows stored in any accepted form (or `{}` for "no condition") behave alike.
 */
export function decide({ policies, groups, subject, table, operation }: DecideInput): Decision {
  const byId = new Map(groups.map((g) => [g.id, g]));
  let unconditionalAllow = false;
  const allows: Filter[] = [];
  const denies: Filter[] = [];
  for (const p of policies) {
    if (p.table_name !== table || p.operation !== operation || !inGroup(byId.get(p.policy_group_id), subject)) continue;
    const c = p.condition === null || p.condition === undefined ? null : parseCondition(p.condition);
    const conditional = c !== null && Object.keys(c).length > 0;
    if (p.mode === 'deny') {
      // First in the given order; the caller's order (e.g. by name) makes the reported policy stable.
      if (!conditional) return { allowed: false, reason: 'deny_matched', policy: p.name };
      denies.push(toFilter(c));
    } else if (!conditional) {
      unconditionalAllow = true;
    } else {
      allows.push(toFilter(c));
    }
  }
  if (!unconditionalAllow && allows.length === 0) return { allowed: false, reason: 'no_allow' };
  const parts: Filter[] = [];
  if (!unconditionalAllow) parts.push(join('or', allows));
  if (denies.length > 0) parts.push({ kind: 'not', arg: join('or', denies) });
  return { allowed: true, filter: parts.length === 0 ? null : join('and', parts) };
}

/**
 * The row filter a condition stands for, as `decide` builds it for a policy (null: no condition, every row). What
 * explain shows for one policy or one field of its condition.
 */
export function conditionFilterOf(condition: unknown): Filter | null {
  const c = condition === null || condition === undefined ? null : parseCondition(condition);
  return c === null || Object.keys(c).length === 0 ? null : toFilter(c);
}

/**
 * The policies `decide` weighs for the subject on (table, operation), in the order it weighs them: those whose table
 * and operation are the request's and whose group holds the subject (docs/approvals.md's explain, and
 * docs/sql-and-policies.md#explain). What `decide` concludes from them is its own answer; this only names them.
 */
export function matchingPolicies({ policies, groups, subject, table, operation }: DecideInput): Policy[] {
  const byId = new Map(groups.map((g) => [g.id, g]));
  return policies.filter((p) => p.table_name === table && p.operation === operation && inGroup(byId.get(p.policy_group_id), subject));
}

/** The `details` of a POLICY_DENIED answer: table, operation and why. Never row data. */
export function describeDenial(d: Denial, table: string, operation: Operation): string {
  return d.reason === 'deny_matched'
    ? `${operation} on table "${table}" is denied by deny policy "${d.policy}"`
    : `no allow policy grants ${operation} on table "${table}" (default deny)`;
}
