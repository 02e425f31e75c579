import { ServiceError } from '@wds/errors';
import { type Condition, type Filter, type Subject, conditionFilterOf, decide, matchingPolicies, parseCondition } from '@wds/policy-engine';
import type { SqlContext } from './context.js';
import { bindUser } from './explain.js';

/** Checks one row explanation may run at most (each is a read of the row): policies × their fields, plus two. */
export const MAX_ROW_CHECKS = 64;

/** One field of a policy's condition, and whether the row matches it. */
export interface ConditionCheck {
  column: string;
  condition: Condition;
  matches: boolean;
}

export interface RowPolicyCheck {
  id: string;
  name: string;
  policy_group_id: string;
  mode: 'allow' | 'deny';
  /** The row matches the whole condition (a policy without one matches every row): an allow grants it, a deny hides it. */
  matches: boolean;
  conditions: ConditionCheck[];
}

export interface RowExplanation {
  table: string;
  user_id: string;
  decision: 'allow' | 'deny' | 'default_deny';
  /** Whether the user's select policies let this row through. */
  visible: boolean;
  policies: RowPolicyCheck[];
}

/**
 * The row explanation of one visible row (WorkspaceSql.explainRow): `matches(filter)` reads the row with the
 * viewer's filter and `filter` added, and tells whether it came back.
 */
export async function explainRowOf(
  table: string,
  ctx: Pick<SqlContext, 'policies' | 'groups'>,
  subject: Subject,
  matches: (filter: Filter | null) => Promise<boolean>,
): Promise<RowExplanation> {
  const input = { policies: ctx.policies, groups: ctx.groups, subject, table, operation: 'select' as const };
  const policies = matchingPolicies(input);
  const fields = policies.map((p) => Object.entries(p.condition ? parseCondition(p.condition) : {}));
  const checks = fields.reduce((n, f) => n + f.length, 2);
  if (checks > MAX_ROW_CHECKS) {
    throw new ServiceError('VALIDATION_ERROR', 'Too many policy conditions to explain for one row', `${checks} checks; at most ${MAX_ROW_CHECKS}`);
  }
  // The subject's own $user_id, bound before the viewer's filter is added to it.
  const bound = (f: Filter | null) => (f === null || subject.userId === null ? f : bindUser(f, subject.userId));
  const out: RowPolicyCheck[] = [];
  for (const [i, p] of policies.entries()) {
    const conditions: ConditionCheck[] = [];
    for (const [column, fc] of fields[i] ?? []) {
      const filter = conditionFilterOf({ [column]: fc });
      // Shown as the policy states it (`"$user_id"` stays so), checked as the engine reads it.
      const stated = { [column]: (p.condition as Record<string, unknown> | null)?.[column] ?? fc } as Condition;
      conditions.push({ column, condition: stated, matches: await matches(bound(filter)) });
    }
    out.push({ id: p.id, name: p.name, policy_group_id: p.policy_group_id, mode: p.mode, matches: conditions.every((c) => c.matches), conditions });
  }
  const d = decide(input);
  const visible = d.allowed && (await matches(bound(d.filter)));
  return {
    table,
    user_id: subject.userId ?? '',
    decision: d.allowed ? 'allow' : d.reason === 'deny_matched' ? 'deny' : 'default_deny',
    visible,
    policies: out,
  };
}
