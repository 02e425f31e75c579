import { loadModule, parseSync } from 'libpg-query';
import { deparseSync } from 'pgsql-deparser';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Policy, compileFilter, conditionColumns, decide, describeDenial, parseCondition } from '../src/index.js';

beforeAll(() => loadModule());

/** Deparses a filter inside `SELECT 1 WHERE …` so the golden strings are real SQL. */
const sql = (node: unknown) => {
  const tree: any = parseSync('SELECT 1 WHERE true');
  tree.stmts[0].stmt.SelectStmt.whereClause = node;
  return deparseSync(tree, { pretty: false }).replace(/^SELECT 1 WHERE /, '');
};
const U = 'u-1';
const groups = [
  { id: 'ga', user_ids: ['alice'], stf_ids: [] },
  { id: 'gs', user_ids: [], stf_ids: ['stf-1'] },
];
const p = (o: Partial<Policy>): Policy => ({
  id: 'x',
  name: 'p',
  policy_group_id: 'ga',
  mode: 'allow',
  table_name: 't',
  operation: 'select',
  condition: null,
  ...o,
});
const alice = { kind: 'user', userId: 'alice' } as const;

describe('parseCondition', () => {
  it('normalises the simple form, null and $user_id', () => {
    expect(parseCondition({ a: 1, b: null, c: '$user_id', d: { $var: 'user_id' } })).toEqual({
      a: [{ op: '$eq', value: 1 }],
      b: [{ op: '$null', value: true }],
      c: [{ op: '$eq', value: { $var: 'user_id' } }],
      d: [{ op: '$eq', value: { $var: 'user_id' } }],
    });
    expect(parseCondition({})).toBeNull();
    expect(parseCondition(null)).toBeNull();
  });

  it.each([
    [[], 'expected an object'],
    ['x', 'expected an object'],
    [{ a: { $like: 'x' } }, 'unknown operator $like'],
    [{ a: { $in: 'x' } }, '$in: expected an array'],
    [{ a: { $in: [{}] } }, '$in[0]'],
    [{ a: { $null: 'yes' } }, '$null: expected true or false'],
    [{ a: {} }, 'empty object'],
    [{ a: [1] }, 'expected a string'],
    [{ A: 1 }, 'lower-case'],
    [{ a: { $var: 'other' } }, 'only variable is user_id'],
    [{ a: Number.POSITIVE_INFINITY }, 'finite'],
  ])('refuses %j', (input, why) => {
    expect(() => parseCondition(input)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR', details: expect.stringContaining(why) }));
  });

  it('lists the columns it references', () => {
    expect(conditionColumns(parseCondition({ a: 1, b: { $gt: 2 } })!)).toEqual(['a', 'b']);
  });
});

describe('decide', () => {
  it.each([
    ['no policy', [], { allowed: false, reason: 'no_allow' }],
    ['other table', [p({ table_name: 'u' })], { allowed: false, reason: 'no_allow' }],
    ['other operation', [p({ operation: 'update' })], { allowed: false, reason: 'no_allow' }],
    ['subject not in the group', [p({ policy_group_id: 'gs' })], { allowed: false, reason: 'no_allow' }],
    ['unconditional allow', [p({})], { allowed: true, filter: null }],
    ['unconditional deny wins', [p({}), p({ mode: 'deny', name: 'stop' })], { allowed: false, reason: 'deny_matched', policy: 'stop' }],
    ['deny alone is still no allow', [p({ mode: 'deny', condition: { a: 1 } })], { allowed: false, reason: 'no_allow' }],
  ] as const)('%s', (_n, policies, expected) => {
    expect(decide({ policies, groups, subject: alice, table: 't', operation: 'select' })).toEqual(expected);
  });

  it('ORs allows, an unconditional allow making the allow part TRUE, and subtracts conditional denies', () => {
    const d = decide({
      policies: [p({ condition: { a: 1 } }), p({ condition: { b: 2 } }), p({ mode: 'deny', condition: { c: 3 } })],
      groups,
      subject: alice,
      table: 't',
      operation: 'select',
    });
    expect(d.allowed && sql(compileFilter(d.filter, { qualifier: 't', userId: U }))).toBe('(t.a = 1 OR t.b = 2) AND NOT (t.c = 3)');
    const e = decide({ policies: [p({ condition: { a: 1 } }), p({}), p({ mode: 'deny', condition: { c: 3 } })], groups, subject: alice, table: 't', operation: 'select' });
    expect(e.allowed && sql(compileFilter(e.filter, { userId: U }))).toBe('NOT (c = 3)');
  });

  it('STF subjects match STF groups only', () => {
    const policies = [p({ policy_group_id: 'gs' })];
    expect(decide({ policies, groups, subject: { kind: 'stf', stfId: 'stf-1', userId: null }, table: 't', operation: 'select' }).allowed).toBe(true);
    expect(decide({ policies, groups, subject: { kind: 'stf', stfId: 'stf-2', userId: 'alice' }, table: 't', operation: 'select' }).allowed).toBe(false);
  });

  it('describes denials without data', () => {
    expect(describeDenial({ allowed: false, reason: 'no_allow' }, 'orders', 'delete')).toBe('no allow policy matched delete on "orders"');
    expect(describeDenial({ allowed: false, reason: 'deny_matched', policy: 'x' }, 'orders', 'select')).toBe('deny policy "x" matched select on "orders"');
  });
});

describe('compileFilter', () => {
  const one = (condition: unknown, userId: string | null = U) =>
    sql(compileFilter({ anyOf: [parseCondition(condition)!], noneOf: [] }, { qualifier: 'o', userId }));

  it.each([
    [{ owner: '$user_id' }, "o.owner = 'u-1'"],
    [{ n: { $gte: 1, $lt: 2.5 } }, 'o.n >= 1 AND o.n < 2.5'],
    [{ n: 0 }, 'o.n = 0'],
    [{ s: { $ne: 'x' }, f: false }, "o.s <> 'x' AND o.f = false"],
    [{ s: { $in: ['a', 'b'] } }, "o.s IN ('a', 'b')"],
    [{ s: { $in: [] } }, 'false'],
    [{ s: { $null: false } }, 'o.s IS NOT NULL'],
    [{ s: "x' OR '1'='1" }, "o.s = 'x'' OR ''1''=''1'"],
  ])('%j → %s', (condition, expected) => {
    expect(one(condition)).toBe(expected);
    // The output parses back as one expression.
    expect(parseSync(`SELECT 1 FROM o WHERE ${expected}`).stmts).toHaveLength(1);
  });

  it('an anonymous $user_id compiles to NULL, which matches nothing', () => {
    expect(one({ owner: '$user_id' }, null)).toBe('o.owner = NULL');
    expect(one({ owner: { $ne: '$user_id' } }, null)).toBe('o.owner <> NULL');
  });

  it('TRUE when there is nothing to filter', () => {
    expect(sql(compileFilter(null, { userId: U }))).toBe('true');
  });
});
