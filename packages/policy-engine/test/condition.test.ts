import { ServiceError } from '@wds/errors';
import { describe, expect, it } from 'vitest';
import { MAX_IN_ITEMS, MAX_VALUE_CHARS, conditionColumns, parseCondition } from '../src/index.js';

const details = (input: unknown): string | undefined => {
  try {
    parseCondition(input);
  } catch (e) {
    expect(e).toBeInstanceOf(ServiceError);
    expect((e as ServiceError).code).toBe('VALIDATION_ERROR');
    return (e as ServiceError).details;
  }
  throw new Error('expected a validation error');
};

describe('parseCondition normalises', () => {
  it.each<[string, unknown, unknown]>([
    ['empty object (TRUE)', {}, {}],
    ['simple form → $eq', { status: 'open', n: 3, ok: true }, { status: { $eq: 'open' }, n: { $eq: 3 }, ok: { $eq: true } }],
    ['null → $null: true', { deleted_at: null }, { deleted_at: { $null: true } }],
    ['"$user_id" → $var', { owner_id: '$user_id' }, { owner_id: { $eq: { $var: 'user_id' } } }],
    ['{$var} in simple form', { owner_id: { $var: 'user_id' } }, { owner_id: { $eq: { $var: 'user_id' } } }],
    [
      'operators in a fixed order',
      { age: { $lt: 65, $null: false, $gte: 18 } },
      { age: { $gte: 18, $lt: 65, $null: false } },
    ],
    ['$in with a placeholder', { team: { $in: ['a', 1, '$user_id'] } }, { team: { $in: ['a', 1, { $var: 'user_id' }] } }],
    ['empty $in', { team: { $in: [] } }, { team: { $in: [] } }],
    ['$ne with $var', { owner_id: { $ne: { $var: 'user_id' } } }, { owner_id: { $ne: { $var: 'user_id' } } }],
    ['a $ that is no placeholder stays literal', { price: '$5', tag: '$' }, { price: { $eq: '$5' }, tag: { $eq: '$' } }],
    ['63-character column', { ['a'.repeat(63)]: 1 }, { ['a'.repeat(63)]: { $eq: 1 } }],
  ])('%s', (_name, input, expected) => {
    const c = parseCondition(input);
    expect(c).toEqual(expected);
    // The normal form is a fixed point, so stored conditions can be parsed again.
    expect(parseCondition(JSON.parse(JSON.stringify(c)))).toEqual(c);
  });

  it('keeps a column named __proto__ as an own property', () => {
    const c = parseCondition(JSON.parse('{"__proto__": 1}'));
    expect(Object.keys(c)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
  });

  it('conditionColumns lists the referenced columns', () => {
    expect(conditionColumns(parseCondition({ owner_id: '$user_id', status: { $in: ['a'] }, x: null }))).toEqual([
      'owner_id',
      'status',
      'x',
    ]);
    expect(conditionColumns({})).toEqual([]);
  });
});

describe('parseCondition rejects with path and reason', () => {
  it.each<[string, unknown, string]>([
    ['null', null, 'condition: expected an object of {"column": condition}'],
    ['a string', 'owner_id = 1', 'condition: expected an object of {"column": condition}'],
    ['an array', [{ a: 1 }], 'condition: expected an object of {"column": condition}'],
    ['a Date', new Date(0), 'condition: expected an object of {"column": condition}'],
    ['top-level operator', { $or: [] }, 'condition.$or: operators belong under a column; the top level takes column names (ANDed)'],
    ['upper-case column', { Owner: 1 }, 'condition["Owner"]: a column name is a lower-case identifier matching ^[a-z_][a-z0-9_]*$'],
    ['column with a dot', { 'a.b': 1 }, 'condition["a.b"]: a column name is a lower-case identifier matching ^[a-z_][a-z0-9_]*$'],
    ['column starting with a digit', { '1a': 1 }, 'condition["1a"]: a column name is a lower-case identifier matching ^[a-z_][a-z0-9_]*$'],
    ['64-character column', { ['a'.repeat(64)]: 1 }, `condition.${'a'.repeat(64)}: a column name has at most 63 characters`],
    ['empty field object', { status: {} }, 'condition.status: empty object; give a value or operators ($eq, $ne, $gt, $gte, $lt, $lte, $in, $null)'],
    ['unknown operator', { name: { $like: 'a%' } }, 'condition.name.$like: unknown operator (allowed: $eq, $ne, $gt, $gte, $lt, $lte, $in, $null)'],
    ['non-operator key', { meta: { color: 'red' } }, 'condition.meta.color: expected an operator ($eq, $ne, $gt, $gte, $lt, $lte, $in, $null)'],
    ['array as a value', { tags: ['a'] }, 'condition.tags: expected a string, number, boolean, "$user_id" or {"$var": "user_id"}'],
    ['object as an operator value', { n: { $gt: { a: 1 } } }, 'condition.n.$gt: expected a string, number, boolean, "$user_id" or {"$var": "user_id"}'],
    ['null as an operator value', { n: { $eq: null } }, 'condition.n.$eq: null is not a value here (use {"$null": true})'],
    ['non-finite number', { n: { $lt: Number.POSITIVE_INFINITY } }, 'condition.n.$lt: numbers must be finite'],
    ['$in not an array', { n: { $in: 'a,b' } }, 'condition.n.$in: expected an array of strings, numbers or booleans'],
    ['$in with an object', { n: { $in: [1, { x: 1 }] } }, 'condition.n.$in[1]: expected a string, number, boolean, "$user_id" or {"$var": "user_id"}'],
    ['$in with null', { n: { $in: [null] } }, 'condition.n.$in[0]: null is not a value here (use {"$null": true})'],
    ['$in with an array', { n: { $in: [[1]] } }, 'condition.n.$in[0]: expected a string, number, boolean, "$user_id" or {"$var": "user_id"}'],
    ['$null not a boolean', { n: { $null: 'true' } }, 'condition.n.$null: expected true (IS NULL) or false (IS NOT NULL)'],
    ['unknown variable', { n: { $var: 'email' } }, 'condition.n.$var: unknown variable "email" (the only one is "user_id")'],
    ['$var with other keys', { n: { $var: 'user_id', $eq: 1 } }, 'condition.n: $var cannot be combined with other keys'],
    ['placeholder typo', { owner_id: { $ne: '$userid' } }, 'condition.owner_id.$ne: unknown placeholder "$userid" (the only one is "$user_id")'],
  ])('%s', (_name, input, expected) => {
    expect(details(input)).toBe(expected);
  });
});

describe('bounded conditions (a filter is injected into every reference to its table)', () => {
  it('refuses more than MAX_IN_ITEMS values in $in and strings longer than MAX_VALUE_CHARS', () => {
    const ok = Array.from({ length: MAX_IN_ITEMS }, (_, i) => `v${i}`);
    expect(() => parseCondition({ status: { $in: ok } })).not.toThrow();
    expect(details({ status: { $in: [...ok, 'one more'] } })).toContain('at most 100 values');
    expect(() => parseCondition({ title: 'x'.repeat(MAX_VALUE_CHARS) })).not.toThrow();
    expect(details({ title: 'x'.repeat(MAX_VALUE_CHARS + 1) })).toContain('at most 1000 characters');
  });
});
