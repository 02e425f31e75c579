import { parseCondition } from './condition.js';
import type { Condition, Decision, Filter, Operation, Policy, PolicyGroup, Subject } from './types.js';

export interface DecideInput {
  policies: readonly Policy[];
  groups: readonly PolicyGroup[];
  subject: Subject;
  table: string;
  operation: Operation;
}

const inGroup = (g: PolicyGroup | undefined, s: Subject): boolean =>
  g !== undefined && (s.kind === 'user' ? g.user_ids.includes(s.userId) : g.stf_ids.includes(s.stfId));

/**
 * Spec §1 and DECISIONS §5: a matching deny without a condition rejects; no matching allow rejects; otherwise
 * the row filter is (OR of allow conditions, an unconditional allow being TRUE) AND NOT (OR of deny conditions).
 */
export function decide({ policies, groups, subject, table, operation }: DecideInput): Decision {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const allows: (Condition | null)[] = [];
  const denies: Condition[] = [];
  for (const p of policies) {
    if (p.table_name !== table || p.operation !== operation || !inGroup(byId.get(p.policy_group_id), subject)) continue;
    const condition = parseCondition(p.condition);
    if (p.mode === 'deny') {
      if (condition === null) return { allowed: false, reason: 'deny_matched', policy: p.name };
      denies.push(condition);
    } else {
      allows.push(condition);
    }
  }
  if (allows.length === 0) return { allowed: false, reason: 'no_allow' };
  const anyOf = allows.includes(null) ? null : (allows as Condition[]);
  const filter: Filter | null = anyOf === null && denies.length === 0 ? null : { anyOf, noneOf: denies };
  return { allowed: true, filter };
}

/** The `details` of a 403: table, operation and why — never row data. */
export function describeDenial(d: Decision, table: string, operation: Operation): string {
  if (d.allowed) return '';
  return d.reason === 'deny_matched'
    ? `deny policy "${d.policy}" matched ${operation} on "${table}"`
    : `no allow policy matched ${operation} on "${table}"`;
}
