import { describe, expect, it } from 'vitest';
import { decide, matchingPolicies } from '../src/index.js';
import type { Policy, PolicyGroup, Subject } from '../src/types.js';

/** matchingPolicies names what decide weighs: checked against decide over many generated policy sets. */
describe('matchingPolicies', () => {
  it('holds exactly the policies decide weighs, whatever the set', () => {
    let seed = 42;
    const rand = (k: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    const groups: PolicyGroup[] = [
      { id: 'g-alice', user_ids: ['alice'], stf_ids: [] },
      { id: 'g-both', user_ids: ['alice', 'bob'], stf_ids: ['stf'] },
      { id: 'g-bob', user_ids: ['bob'], stf_ids: [] },
    ];
    const subjects: Subject[] = [{ kind: 'user', userId: 'alice' }, { kind: 'user', userId: 'bob' }, { kind: 'stf', stfId: 'stf', userId: 'alice' }];
    for (let round = 0; round < 300; round++) {
      const policies: Policy[] = Array.from({ length: rand(6) }, (_, i) => ({
        id: `p${i}`,
        name: `p${i}`,
        policy_group_id: groups[rand(3)]!.id,
        mode: rand(3) === 0 ? 'deny' : 'allow',
        table_name: rand(4) === 0 ? 'other' : 't',
        operation: rand(4) === 0 ? 'update' : 'select',
        condition: rand(2) === 0 ? null : { n: { $gt: rand(5) } },
      }));
      for (const subject of subjects) {
        const input = { policies, groups, subject, table: 't', operation: 'select' as const };
        const matching = matchingPolicies(input);
        const d = decide(input);
        for (const p of matching) expect(p.table_name === 't' && p.operation === 'select').toBe(true);
        if (!d.allowed && d.reason === 'deny_matched') {
          expect(matching.find((p) => p.name === d.policy)).toMatchObject({ mode: 'deny', condition: null });
        } else if (!d.allowed) {
          expect(matching.some((p) => p.mode === 'allow')).toBe(false);
        } else {
          expect(matching.some((p) => p.mode === 'allow')).toBe(true);
          expect(matching.some((p) => p.mode === 'deny' && p.condition === null)).toBe(false);
          expect(d.filter === null).toBe(matching.some((p) => p.mode === 'allow' && p.condition === null) && !matching.some((p) => p.mode === 'deny'));
        }
      }
    }
  });
});
