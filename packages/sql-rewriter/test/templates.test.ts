import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { columns } from './catalog.js';
import {
  type FilterFn,
  type RewriteOptions,
  analyzeParsed,
  buildTemplate,
  constantsOf,
  fillTemplate,
  learnLexical,
  lexicalShape,
  firstDifference,
  loadParser,
  parseOne,
  parseSqlTree,
  printVerified,
  rewriteTree,
  shapeOf,
} from '../src/index.js';

const WS = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee';
const catalog = new Map([
  ['orders', columns(['id', 'owner', 'total', 'created_at', 'updated_at', 'deleted_at'])],
  ['items', columns(['id', 'order_id', 'title'])],
]);
const ownerFilter: FilterFn = (table, _op, q) =>
  table === 'orders'
    ? { A_Expr: { kind: 'AEXPR_OP', name: [{ String: { sval: '=' } }], lexpr: { ColumnRef: { fields: [{ String: { sval: q } }, { String: { sval: 'owner' } }] } }, rexpr: { A_Const: { sval: { sval: 'u1' } } } } }
    : null;
const options: RewriteOptions = { workspaceId: WS, catalog, filter: ownerFilter };

/** The full path: what the statement rewrites to, as text, and the tree that text must be. */
function full(sql: string) {
  const parsed = parseOne(sql);
  const shape = shapeOf(parsed, sql);
  const a = analyzeParsed(parsed);
  const tree = rewriteTree(a, options);
  return { shape, a, tree, text: printVerified(tree) };
}

/** The template of `first`, filled with the constants of `second`, must parse to the full rewrite of `second`. */
function sameAsFull(first: string, second: string): { shared: boolean } {
  const one = full(first);
  const two = full(second);
  if (!one.shape || !two.shape || one.shape.key !== two.shape.key) return { shared: false };
  const template = buildTemplate(one.a, options, one.tree, one.shape);
  if (!template) return { shared: false };
  const filled = fillTemplate(template, two.shape.constants);
  const diff = firstDifference(two.tree.stmts[0].stmt, parseSqlTree(filled).stmts[0].stmt);
  expect(diff, `${second}\n→ ${filled}\nexpected ${two.text}`).toBeUndefined();
  return { shared: true };
}

beforeAll(loadParser);

describe('shapeOf', () => {
  const key = (sql: string) => shapeOf(parseOne(sql), sql)?.key;

  it('is the same for statements that differ only in constants, whatever their spelling', () => {
    const k = key("SELECT * FROM orders WHERE id = 'a' AND total > 10 AND owner <> 'x' LIMIT 5");
    expect(key("select * from orders where id = E'b\\n' and total > 99 and owner <> $$y$$ limit 1")).toBe(k);
    expect(key("SELECT * FROM orders WHERE id = 'it''s' AND total > 0 AND owner <> '' LIMIT 500")).toBe(k);
  });

  it('differs when anything but a constant value differs', () => {
    const k = key("SELECT * FROM orders WHERE id = 'a'");
    for (const other of [
      "SELECT * FROM orders WHERE owner = 'a'",
      "SELECT * FROM items WHERE id = 'a'",
      "SELECT * FROM orders WHERE id <> 'a'",
      'SELECT * FROM orders WHERE id = 1',
      'SELECT * FROM orders WHERE id = 1.5',
      'SELECT * FROM orders WHERE id = true',
      'SELECT * FROM orders WHERE id = NULL',
      "SELECT * FROM orders WHERE id = B'1'",
      'SELECT * FROM orders WHERE id = "a"',
      "SELECT id FROM orders WHERE id = 'a'",
    ]) {
      expect(key(other), other).not.toBe(k);
    }
  });

  it('keeps the sign of numbers in the shape (negative ones are printed in parentheses)', () => {
    expect(key('SELECT * FROM orders WHERE total = -5')).not.toBe(key('SELECT * FROM orders WHERE total = 5'));
    expect(key('SELECT * FROM orders WHERE total = -5.5')).not.toBe(key('SELECT * FROM orders WHERE total = 5.5'));
    expect(key('SELECT * FROM orders WHERE total = -5')).toBe(key('SELECT * FROM orders WHERE total = - 7'));
  });

  it('keeps positional integers (ORDER BY, GROUP BY, DISTINCT ON) in the key', () => {
    expect(key('SELECT owner, total FROM orders ORDER BY 1')).not.toBe(key('SELECT owner, total FROM orders ORDER BY 2'));
    expect(key('SELECT owner, count(*) FROM orders GROUP BY 1')).not.toBe(key('SELECT owner, count(*) FROM orders GROUP BY 2'));
    expect(key('SELECT DISTINCT ON (1) owner FROM orders')).not.toBe(key('SELECT DISTINCT ON (2) owner FROM orders'));
    expect(key("SELECT owner FROM orders WHERE id = 'a' ORDER BY 1")).toBe(key("SELECT owner FROM orders WHERE id = 'b' ORDER BY 1"));
  });

  it('keeps constants the grammar makes from keywords (interval fields, extract) in the key', () => {
    expect(key("SELECT interval '1' day")).not.toBe(key("SELECT interval '1' hour"));
    // A literal cast to a type with modifiers is read with them (as a parameter, interval '1' day would be 0).
    expect(key("SELECT interval '1' day")).not.toBe(key("SELECT interval '2' day"));
    expect(key("SELECT 'ab'::varchar(3)")).not.toBe(key("SELECT 'cd'::varchar(3)"));
    expect(key("SELECT interval '1 day'")).toBe(key("SELECT interval '2 days'"));
    expect(key('SELECT extract(day from now())')).not.toBe(key('SELECT extract(year from now())'));
    expect(key('SELECT true')).not.toBe(key('SELECT false'));
  });

  it('takes the constants in tree order, each as one literal token', () => {
    const sql = "SELECT 'a''b', -3, 2.5e3, E'c\\'d', $x$e'f$x$ FROM orders";
    expect(shapeOf(parseOne(sql), sql)?.constants).toEqual([
      { kind: 's', text: "'a''b'", value: "a'b" },
      { kind: 'i-', text: '(-3)', value: '-3' },
      { kind: 'f', text: '2.5e3', value: '2.5e3' },
      { kind: 's', text: "'c''d'", value: "c'd" },
      { kind: 's', text: "'e''f'", value: "e'f" },
    ]);
    const big = 'SELECT 3000000000, -3000000000, 99999999999999999999, -2147483648, 2147483648, -9223372036854775808, 9223372036854775808 FROM orders';
    // As PostgreSQL types each literal: int4, int8 or numeric by the value (the sign included).
    expect(shapeOf(parseOne(big), big)?.constants.map((c) => c.kind)).toEqual(['l', 'l-', 'f', 'i-', 'l', 'l-', 'f']);
  });

  it('finds constants after multi-byte characters (positions are UTF-8 bytes)', () => {
    const sql = "SELECT 'é😀' AS \"ü\", 42 FROM orders WHERE owner = 'ß'";
    expect(shapeOf(parseOne(sql), sql)?.constants.map((c) => c.text)).toEqual(["'é😀'", '42', "'ß'"]);
  });
});

describe('templates: filled, they are exactly the full rewrite', () => {
  it.each([
    ["SELECT * FROM orders WHERE id = 'a'", "SELECT * FROM orders WHERE id = 'it''s -- not a comment'"],
    ["SELECT * FROM orders o WHERE o.id = 'x' AND total::int / 0 = 1 AND id IN ('a', 'b')", "SELECT * FROM orders o WHERE o.id = 'y' AND total::int / 7 = 3 AND id IN ('c', E'd\\\\')"],
    ['SELECT * FROM orders WHERE total > -5 ORDER BY 1 LIMIT 3 OFFSET 2', 'SELECT * FROM orders WHERE total > -9 ORDER BY 1 LIMIT 10 OFFSET 0'],
    ['SELECT * FROM orders WHERE total > 3000000000 OR total < -3000000000', 'SELECT * FROM orders WHERE total > 4000000000 OR total < -5000000000'],
    ["SELECT o.id, i.title FROM orders o JOIN items i ON i.order_id = o.id WHERE i.title LIKE 'a%'", "SELECT o.id, i.title FROM orders o JOIN items i ON i.order_id = o.id WHERE i.title LIKE '%''; DROP TABLE x; --'"],
    ["INSERT INTO orders (owner, total) VALUES ('u1', 5) RETURNING id", "INSERT INTO orders (owner, total) VALUES ('u2', 77) RETURNING id"],
    ['UPDATE orders SET total = 0 WHERE total > 1 OR id = 5', 'UPDATE orders SET total = 7 WHERE total > 2 OR id = 7'],
    ["DELETE FROM orders WHERE owner = 'a'", "DELETE FROM orders WHERE owner = '$1'"],
    ["WITH t AS (SELECT 'a' AS v) SELECT v, '$1' FROM t", "WITH t AS (SELECT '/*' AS v) SELECT v, '*/' FROM t"],
    ["SELECT '5'::int, 1.5::numeric(10, 2), interval '1' day FROM orders", "SELECT '6'::int, 1.5::numeric(10, 2), interval '1' day FROM orders"],
    ["SELECT * FROM orders WHERE created_at > now() - interval '1 day'", "SELECT * FROM orders WHERE created_at > now() - interval '7 days'"],
  ])('%s', (first, second) => {
    expect(sameAsFull(first, second).shared).toBe(true);
  });

  it('is not made for statements it cannot parameterize, and a statement never shares with another shape', () => {
    // DDL takes the full path in the service (its option values are read); here only the shapes differ.
    expect(sameAsFull("SELECT * FROM orders WHERE id = 'a'", "SELECT * FROM orders WHERE owner = 'a'").shared).toBe(false);
  });

  it('holds for generated statements with hostile constants (two constants of each shape, compared with the full path)', () => {
    const FRAGMENTS = ["'", "''", '"', '/*', '*/', '--', '$$', '$1', '$a$', '\\', '\n', ';', ')', '(', 'é', '😀', ' ', 'x', 'E', 'U&'];
    const text = fc.array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 3 })), { maxLength: 6 }).map((p) => p.join('')).filter((s) => !s.includes('\u0000'));
    const literal = text.chain((s) =>
      fc.constantFrom(`'${s.replaceAll("'", "''")}'`, `E'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`, s.includes('$') ? `'x'` : `$q$${s}$q$`),
    );
    const number = fc.oneof(fc.integer({ min: -1e6, max: 1e6 }).map(String), fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((d) => d.toFixed(3)));
    const forms: ((l: string, n: string) => string)[] = [
      (l, n) => `SELECT * FROM orders WHERE id = ${l} AND total > ${n}`,
      (l, n) => `SELECT ${l} AS a, ${n} AS b FROM orders o JOIN items i ON i.order_id = o.id WHERE i.title <> ${l}`,
      (l, n) => `UPDATE orders SET owner = ${l}, total = ${n} WHERE id = ${l} RETURNING id`,
      (l, n) => `INSERT INTO items (title, order_id) VALUES (${l}, ${n})`,
      (l, n) => `SELECT * FROM orders WHERE owner IN (${l}, ${l}) ORDER BY total LIMIT ${n.replace(/[-.].*/, '') || '1'}`,
    ];
    let shared = 0;
    fc.assert(
      fc.property(fc.nat(forms.length - 1), literal, literal, number, number, (f, l1, l2, n1, n2) => {
        const form = forms[f] as (l: string, n: string) => string;
        if (sameAsFull(form(l1, n1), form(l2, n2)).shared) shared++;
      }),
      { numRuns: 300 },
    );
    // About 2 pairs in 5 share a shape (each number is one of four kinds: integer or decimal, either sign); 60 is
    // several standard deviations below the ~120 expected, so this checks that sharing happens, never flakes.
    expect(shared).toBeGreaterThan(60);
  });
});

/**
 * The lexical shortcut: a statement with the same lexical shape as one parsed before must get exactly the shape and
 * constants a parse would give it (or nothing, and then it is parsed).
 */
function lexicallySame(first: string, second: string): boolean {
  const lex1 = lexicalShape(first);
  const lex2 = lexicalShape(second);
  if (!lex1 || !lex2 || lex1.key !== lex2.key) return false;
  const shape1 = shapeOf(parseOne(first), first);
  const map = shape1 && learnLexical(shape1, lex1, first);
  if (!map) return false;
  const constants = constantsOf(map, lex2);
  if (!constants) return false;
  const shape2 = shapeOf(parseOne(second), second);
  expect(shape2?.key, second).toBe(shape1.key);
  expect(constants, second).toEqual(shape2?.constants);
  return true;
}

describe('lexical shapes', () => {
  it('give the constants a parse gives, for statements that differ only inside literals', () => {
    for (const [a, b] of [
      ["SELECT * FROM orders WHERE id = 'a'", "SELECT * FROM orders WHERE id = 'it''s é😀'"],
      ['SELECT * FROM orders WHERE total > -5 AND total < 7.25', 'SELECT * FROM orders WHERE total > -0012 AND total < .5'],
      ['SELECT * FROM orders WHERE total - 5 > - 3', 'SELECT * FROM orders WHERE total - 9 > - 4'],
      ["SELECT id AS \"a''b\", 'x' FROM orders LIMIT 5", "SELECT id AS \"a''b\", 'y' FROM orders LIMIT 6"],
      ["SELECT total FROM orders o WHERE o.id IN ('a', 'b') ORDER BY 1", "SELECT total FROM orders o WHERE o.id IN ('c', 'd') ORDER BY 1"],
    ]) {
      expect(lexicallySame(a as string, b as string), `${a} / ${b}`).toBe(true);
    }
  });

  it('keep literals that are not parameters in their value (positions, typed-with-modifier casts)', () => {
    expect(lexicallySame('SELECT total FROM orders ORDER BY 1', 'SELECT total FROM orders ORDER BY 2')).toBe(false);
    expect(lexicallySame("SELECT interval '1' day", "SELECT interval '2' day")).toBe(false);
    expect(lexicallySame("SELECT interval '1' day", "SELECT interval '1' day")).toBe(true);
  });

  it('give up on anything outside their narrow grammar', () => {
    for (const sql of [
      "SELECT E'a'",
      "SELECT U&'a'",
      "SELECT B'1'",
      'SELECT $$a$$',
      'SELECT 1 -- c',
      'SELECT /* c */ 1',
      'SELECT 1e5',
      'SELECT 1234567890',
      "SELECT 'a'\n'b'",
      'SELECT a$b FROM t',
      'SELECT é FROM t',
      'SELECT 0x1f',
      'SELECT 1_000',
      "SELECT 'unterminated",
    ]) {
      expect(lexicalShape(sql), sql).toBeUndefined();
    }
  });

  it('holds for generated statements with hostile literals and quoted names', () => {
    const FRAGMENTS = ["'", "''", '"', '/*', '*/', '--', '$$', '$1', '\\', '\n', ';', ')', '(', 'é', '😀', ' ', 'x', 'E', 'U&'];
    const text = fc.array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 3 })), { maxLength: 6 }).map((p) => p.join('')).filter((x) => !x.includes('\u0000'));
    const literal = text.map((x) => `'${x.replaceAll("'", "''")}'`);
    const number = fc.oneof(fc.integer({ min: -999_999_999, max: 999_999_999 }).map(String), fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((d) => d.toFixed(3)));
    // Quoted names with the same hostile text: kept verbatim in the lexical key, never taken for literals.
    const ident = text.filter((x) => x.length > 0 && Buffer.byteLength(x) <= 40).map((x) => `"${x.replaceAll('"', '""')}"`);
    const forms: ((l: string, n: string, id: string) => string)[] = [
      (l, n) => `SELECT * FROM orders WHERE id = ${l} AND total > ${n}`,
      (l, n, id) => `SELECT ${l} AS ${id}, ${n} AS b FROM orders o JOIN items i ON i.order_id = o.id WHERE i.title <> ${l}`,
      (l, n, id) => `UPDATE orders AS ${id} SET owner = ${l}, total = ${n} WHERE ${id}.id = ${l} RETURNING id AS ${id}`,
      (l, n, id) => `WITH ${id} AS (SELECT * FROM orders WHERE total = ${n}-${n} OR owner IN (${l}, ${l})) SELECT * FROM ${id} ORDER BY 1`,
    ];
    let same = 0;
    fc.assert(
      fc.property(fc.nat(forms.length - 1), literal, literal, number, number, ident, (f, l1, l2, n1, n2, id) => {
        const form = forms[f] as (l: string, n: string, id: string) => string;
        try {
          parseOne(form(l1, n1, id));
          parseOne(form(l2, n2, id));
        } catch {
          return;
        }
        if (lexicallySame(form(l1, n1, id), form(l2, n2, id))) same++;
      }),
      { numRuns: 400 },
    );
    expect(same).toBeGreaterThan(40);
  });
});

describe('templates of bounded statements (bounds.ts)', () => {
  it('are made, and follow their constants into the run-time checks', () => {
    for (const [first, second] of [
      ["SELECT length(format('%5s', 'x')) FROM orders", "SELECT length(format('%600000000s', 'y')) FROM orders"],
      ["SELECT string_agg(title, ',') FROM items", "SELECT string_agg(title, '-') FROM items"],
      ["SELECT array_agg(1) FILTER (WHERE id > 2 AND id < 9), jsonb_object_agg('k', id) FROM items", "SELECT array_agg(7) FILTER (WHERE id > 3 AND id < 4), jsonb_object_agg('j', id) FROM items"],
      ["SELECT replace(title, 'a', 'bb'), regexp_replace(title, 'a', 'b', 'g') FROM items", "SELECT replace(title, 'c', 'dd'), regexp_replace(title, 'e', 'f', 'i') FROM items"],
      ["SELECT ARRAY(SELECT 'x' FROM items WHERE id > 1)", "SELECT ARRAY(SELECT 'y' FROM items WHERE id > 5)"],
      ["SELECT ARRAY(SELECT * FROM (SELECT title FROM items WHERE id > 1) s)", "SELECT ARRAY(SELECT * FROM (SELECT title FROM items WHERE id > 7) s)"],
      ["UPDATE orders SET total = 1 WHERE id = 'a' RETURNING (SELECT string_agg(title, ',') FROM items)", "UPDATE orders SET total = 2 WHERE id = 'b' RETURNING (SELECT string_agg(title, ';') FROM items)"],
      ["WITH RECURSIVE r(s, n) AS (SELECT 'x', 1 UNION ALL SELECT s || 'y', n + 1 FROM r WHERE n < 3) SELECT * FROM r", "WITH RECURSIVE r(s, n) AS (SELECT 'a', 1 UNION ALL SELECT s || 'b', n + 1 FROM r WHERE n < 9) SELECT * FROM r"],
    ] as const) {
      expect(sameAsFull(first, second).shared, first).toBe(true);
      expect(full(second).text).toMatch(/user_data\.(wds_|replace|regexp_replace)/);
    }
  });
});
