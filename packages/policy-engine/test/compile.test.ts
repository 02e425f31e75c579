import { loadModule } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Filter, type Policy, type PolicyGroup, compileFilter, decide } from '../src/index.js';
import { parseWhere, passes, whereSql } from './sql.js';

beforeAll(async () => {
  await loadModule();
});

const groups: PolicyGroup[] = [{ id: 'g', user_ids: ['u1'], stf_ids: ['s1'] }];
let n = 0;
/** The filter decide() makes of allow and deny conditions (null = no condition). */
const filterOf = (allows: unknown[], denies: unknown[] = []): Filter | null => {
  const p = (mode: 'allow' | 'deny', condition: unknown): Policy => ({
    id: `p${++n}`,
    name: `p${n}`,
    policy_group_id: 'g',
    mode,
    table_name: 't',
    operation: 'select',
    condition: condition as Policy['condition'],
  });
  const d = decide({
    policies: [...allows.map((c) => p('allow', c)), ...denies.map((c) => p('deny', c))],
    groups,
    subject: { kind: 'user', userId: 'u1' },
    table: 't',
    operation: 'select',
  });
  if (!d.allowed) throw new Error('expected an allowed decision');
  return d.filter;
};

const compiled = (allows: unknown[], denies: unknown[] = [], userId: string | null = 'u1', qualifier: string | null = 't') =>
  compileFilter(filterOf(allows, denies), qualifier === null ? { userId } : { qualifier, userId });

describe('compileFilter golden SQL', () => {
  it.each<[string, unknown[], unknown[], string | null, string]>([
    ['no filter is TRUE', [null], [], 'u1', 'true'],
    ['allows OR, deny AND NOT', [{ owner_id: '$user_id' }, { public: true }], [{ status: 'secret' }], 'u1', "(t.owner_id = 'u1' OR t.public = true) AND NOT (t.status = 'secret')"],
    ['fields AND', [{ owner_id: { $var: 'user_id' }, archived_at: null }], [], 'u1', "t.owner_id = 'u1' AND t.archived_at IS NULL"],
    ['all comparison operators', [{ n: { $eq: 1, $ne: 2, $gt: 3, $gte: 4, $lt: 5, $lte: 6 } }], [], 'u1', 't.n = 1 AND t.n <> 2 AND t.n > 3 AND t.n >= 4 AND t.n < 5 AND t.n <= 6'],
    ['numbers: negative, zero, fractional, beyond int4', [{ a: -5, b: 0, c: 1.5, d: -0.25, e: 3000000000, f: 1e21 }], [], 'u1', 't.a = -5 AND t.b = 0 AND t.c = 1.5 AND t.d = -0.25 AND t.e = 3000000000 AND t.f = 1e+21'],
    ['booleans and the empty string', [{ a: true, b: false, c: '' }], [], 'u1', "t.a = true AND t.b = false AND t.c = ''"],
    ['$in and $null: false', [{ team: { $in: ['a', 2, '$user_id'] }, archived_at: { $null: false } }], [], 'u1', "t.team IN ('a', 2, 'u1') AND t.archived_at IS NOT NULL"],
    ['empty $in is FALSE', [{ team: { $in: [] } }], [], 'u1', 'false'],
    ['empty $in in one allow drops that allow', [{ team: { $in: [] } }, { public: true }], [], 'u1', 't.public = true'],
    ['empty $in in a deny drops that deny', [null], [{ team: { $in: [] } }], 'u1', 'true'],
    ['several denies under one NOT', [null], [{ status: 'secret' }, { archived_at: { $null: false } }], 'u1', "NOT (t.status = 'secret' OR t.archived_at IS NOT NULL)"],
    ['reserved-word column is quoted', [{ order: 1, user: 'x' }], [], 'u1', 't."order" = 1 AND t."user" = \'x\''],
    ['hostile string stays one literal', [{ name: "x' OR '1'='1" }], [], 'u1', "t.name = 'x'' OR ''1''=''1'"],
    ['hostile user id stays one literal', [{ owner_id: '$user_id' }], [], "u1'); DROP TABLE t; --", "t.owner_id = 'u1''); DROP TABLE t; --'"],
    ['backslash is escaped', [{ path: 'a\\b' }], [], 'u1', "t.path = E'a\\\\b'"],
    // Anonymous $user_id: FALSE under an allow, TRUE under a deny.
    ['anonymous: $eq allow grants nothing', [{ owner_id: '$user_id' }], [], null, 'false'],
    ['anonymous: $ne allow grants nothing', [{ owner_id: { $ne: '$user_id' } }], [], null, 'false'],
    ['anonymous: other allows still apply', [{ owner_id: '$user_id' }, { public: true }], [], null, 't.public = true'],
    ['anonymous: $in keeps the known values', [{ team: { $in: ['a', '$user_id'] } }], [], null, "t.team IN ('a')"],
    ['anonymous: $ne deny covers every row', [null], [{ owner_id: { $ne: '$user_id' } }], null, 'false'],
    ['anonymous: $eq deny with another field', [null], [{ owner_id: '$user_id', kind: 'private' }], null, "NOT (t.kind = 'private')"],
    ['anonymous: $in deny covers every row', [null], [{ team: { $in: ['a', '$user_id'] } }], null, 'false'],
  ])('%s', (_name, allows, denies, userId, sql) => {
    const node = compiled(allows, denies, userId);
    expect(whereSql(node)).toBe(sql);
    // The node is exactly what PostgreSQL's parser makes of that SQL.
    expect(parseWhere(sql)).toEqual(node);
  });

  it('leaves columns unqualified without a qualifier', () => {
    expect(whereSql(compiled([{ owner_id: '$user_id' }], [{ status: 'x' }], 'u1', null))).toBe(
      "owner_id = 'u1' AND NOT (status = 'x')",
    );
  });

  it('matches the brief\'s node shape', () => {
    expect(compiled([{ a: 'x' }])).toEqual({
      A_Expr: {
        kind: 'AEXPR_OP',
        name: [{ String: { sval: '=' } }],
        lexpr: { ColumnRef: { fields: [{ String: { sval: 't' } }, { String: { sval: 'a' } }] } },
        rexpr: { A_Const: { sval: { sval: 'x' } } },
      },
    });
    expect(compileFilter(null, { userId: null })).toEqual({ A_Const: { boolval: { boolval: true } } });
  });

  it('keeps a hostile value a single constant after a round trip', () => {
    const hostile = "x' OR '1'='1";
    const back = parseWhere(whereSql(compiled([{ name: hostile }]))) as { A_Expr: { rexpr: unknown } };
    expect(back.A_Expr.rexpr).toEqual({ A_Const: { sval: { sval: hostile } } });
  });
});

describe('compileFilter semantics (SQL three-valued logic)', () => {
  const rows = {
    mine: { owner_id: 'u1', public: false, status: 'open' },
    theirs: { owner_id: 'u2', public: false, status: 'open' },
    publicRow: { owner_id: 'u2', public: true, status: 'open' },
    mySecret: { owner_id: 'u1', public: false, status: 'secret' },
    nullStatus: { owner_id: 'u1', public: false, status: null },
    nullOwner: { owner_id: null, public: true, status: 'open' },
  };
  const visible = (allows: unknown[], denies: unknown[], userId: string | null) => {
    const node = compiled(allows, denies, userId);
    return Object.entries(rows)
      .filter(([, row]) => passes(node, row))
      .map(([name]) => name);
  };

  it('OR of allows, minus denied rows', () => {
    expect(visible([{ owner_id: '$user_id' }, { public: true }], [{ status: 'secret' }], 'u1')).toEqual([
      'mine',
      'publicRow',
      'nullOwner',
    ]);
  });

  it('a deny that is NULL for a row hides the row', () => {
    // NOT (NULL = 'secret') is NULL, and NULL is not TRUE.
    expect(visible([null], [{ status: 'secret' }], 'u1')).not.toContain('nullStatus');
    expect(visible([null], [{ status: { $ne: 'open' } }], 'u1')).toEqual(['mine', 'theirs', 'publicRow', 'nullOwner']);
  });

  it('a NULL column never matches a $user_id allow', () => {
    expect(visible([{ owner_id: { $ne: '$user_id' } }], [], 'u1')).toEqual(['theirs', 'publicRow']);
  });

  it('anonymous: $user_id allows grant nothing, $user_id denies hide everything they could cover', () => {
    expect(visible([{ owner_id: '$user_id' }], [], null)).toEqual([]);
    expect(visible([{ owner_id: { $ne: '$user_id' } }], [], null)).toEqual([]);
    expect(visible([null], [{ owner_id: { $ne: '$user_id' } }], null)).toEqual([]);
    expect(visible([{ public: true }], [{ owner_id: '$user_id' }], null)).toEqual([]);
    expect(visible([{ public: true }], [], null)).toEqual(['publicRow', 'nullOwner']);
  });
});
