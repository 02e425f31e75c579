import { describe, expect, it } from 'vitest';
import { type Condition, type Decision, type Filter, type Policy, type PolicyGroup, type Subject, decide, describeDenial } from '../src/index.js';

const groups: PolicyGroup[] = [
  { id: 'g-people', user_ids: ['u1', 'u2'], stf_ids: [] },
  { id: 'g-batch', user_ids: [], stf_ids: ['s1'] },
  { id: 'g-other', user_ids: ['u9'], stf_ids: ['s9'] },
];
const u1: Subject = { kind: 'user', userId: 'u1' };
const s1: Subject = { kind: 'stf', stfId: 's1', userId: 'u1' };
const s1Anonymous: Subject = { kind: 'stf', stfId: 's1', userId: null };

let n = 0;
const policy = (
  name: string,
  mode: 'allow' | 'deny',
  condition: unknown = null,
  over: Partial<Policy> = {},
): Policy => ({
  id: `p${++n}`,
  name,
  policy_group_id: 'g-people',
  mode,
  table_name: 'orders',
  operation: 'select',
  condition: condition as Condition | null,
  ...over,
});
const allow = (name: string, condition?: unknown, over?: Partial<Policy>) => policy(name, 'allow', condition, over);
const deny = (name: string, condition?: unknown, over?: Partial<Policy>) => policy(name, 'deny', condition, over);

const me: Filter = { kind: 'compare', column: 'owner_id', op: '$eq', value: { $var: 'user_id' } };
const pub: Filter = { kind: 'compare', column: 'public', op: '$eq', value: true };
const secret: Filter = { kind: 'compare', column: 'status', op: '$eq', value: 'secret' };
const archived: Filter = { kind: 'null', column: 'archived_at', isNull: false };
const noAllow: Decision = { allowed: false, reason: 'no_allow' };
const everything: Decision = { allowed: true, filter: null };

describe('decide', () => {
  it.each<[string, Policy[], Subject, Decision]>([
    ['no policies: default deny', [], u1, noAllow],
    ['one unconditional allow', [allow('all')], u1, everything],
    ['allow with {} is unconditional', [allow('all', {})], u1, everything],
    ['allows are ORed', [allow('mine', { owner_id: '$user_id' }), allow('public', { public: true })], u1, { allowed: true, filter: { kind: 'or', args: [me, pub] } }],
    ['an unconditional allow absorbs the others', [allow('mine', { owner_id: '$user_id' }), allow('all')], u1, everything],
    ['several fields AND', [allow('a', { owner_id: '$user_id', archived_at: { $null: false } })], u1, { allowed: true, filter: { kind: 'and', args: [me, archived] } }],
    ['unconditional deny wins over allows', [allow('all'), deny('lockdown')], u1, { allowed: false, reason: 'deny_matched', policy: 'lockdown' }],
    ['deny with {} is unconditional', [allow('all'), deny('lockdown', {})], u1, { allowed: false, reason: 'deny_matched', policy: 'lockdown' }],
    ['the first unconditional deny is reported', [deny('d1'), deny('d2')], u1, { allowed: false, reason: 'deny_matched', policy: 'd1' }],
    ['conditional deny becomes AND NOT', [allow('mine', { owner_id: '$user_id' }), allow('public', { public: true }), deny('secrets', { status: 'secret' })], u1, { allowed: true, filter: { kind: 'and', args: [{ kind: 'or', args: [me, pub] }, { kind: 'not', arg: secret }] } }],
    ['conditional denies are ORed under one NOT', [allow('all'), deny('secrets', { status: 'secret' }), deny('archived', { archived_at: { $null: false } })], u1, { allowed: true, filter: { kind: 'not', arg: { kind: 'or', args: [secret, archived] } } }],
    ['a conditional deny alone is still no allow', [deny('secrets', { status: 'secret' })], u1, noAllow],
    ['other table does not match', [allow('all', null, { table_name: 'invoices' })], u1, noAllow],
    ['other operation does not match', [allow('all', null, { operation: 'update' })], u1, noAllow],
    ['a deny on another operation does not match', [allow('all'), deny('no', null, { operation: 'delete' })], u1, everything],
    ['subject not in the group', [allow('all', null, { policy_group_id: 'g-other' })], u1, noAllow],
    ['a deny for another group does not apply', [allow('all'), deny('no', null, { policy_group_id: 'g-other' })], u1, everything],
    ['unknown group matches nobody', [allow('all', null, { policy_group_id: 'g-missing' })], u1, noAllow],
    ['STF matches through stf_ids', [allow('batch', null, { policy_group_id: 'g-batch' })], s1, everything],
    ['STF does not borrow its user\'s groups', [allow('people', null, { policy_group_id: 'g-people' })], s1, noAllow],
    ['a user does not match stf_ids', [allow('batch', null, { policy_group_id: 'g-batch' })], u1, noAllow],
    ['anonymous STF still gets the $user_id filter (compiled to FALSE)', [allow('mine', { owner_id: '$user_id' }, { policy_group_id: 'g-batch' })], s1Anonymous, { allowed: true, filter: me }],
    ['stored simple-form conditions are normalised', [allow('mine', { owner_id: { $var: 'user_id' } })], u1, { allowed: true, filter: me }],
  ])('%s', (_name, policies, subject, expected) => {
    expect(decide({ policies, groups, subject, table: 'orders', operation: 'select' })).toEqual(expected);
  });

  it('expands several operators on one field in a fixed order', () => {
    const d = decide({ policies: [allow('adults', { age: { $lt: 65, $gte: 18 } })], groups, subject: u1, table: 'orders', operation: 'select' });
    expect(d).toEqual({
      allowed: true,
      filter: {
        kind: 'and',
        args: [
          { kind: 'compare', column: 'age', op: '$gte', value: 18 },
          { kind: 'compare', column: 'age', op: '$lt', value: 65 },
        ],
      },
    });
  });
});

describe('describeDenial', () => {
  it('names table, operation and the reason, nothing else', () => {
    expect(describeDenial({ allowed: false, reason: 'no_allow' }, 'orders', 'update')).toBe(
      'no allow policy grants update on table "orders" (default deny)',
    );
    expect(describeDenial({ allowed: false, reason: 'deny_matched', policy: 'lockdown' }, 'orders', 'delete')).toBe(
      'delete on table "orders" is denied by deny policy "lockdown"',
    );
  });
});
