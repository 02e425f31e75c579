import { ServiceError } from '@wds/errors';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ALLOWED_FUNCTIONS, type FilterFn, analyze, assertRoundTrip, firstDifference, loadParser, parseSqlTree, rewrite } from '../src/index.js';
import { columns } from './catalog.js';

const parseSync = (sql: string) => parseSqlTree(sql);

/**
 * The invariant of the first wall, over generated statements whose every name and literal slot holds hostile
 * text (quotes, comment openers, dollar quotes, backslashes, unicode): whatever rewrite() returns parses back to
 * exactly one statement, names only the caller's own tables in user_data, calls only allowed functions, and keeps
 * every string the user wrote as a string. Anything else must be a ServiceError (a 4xx), never a plain Error.
 */

const WS = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee';
const PREFIX = 'ws_0190aaaa_bbbb_7ccc_8ddd_eeeeeeeeeeee_';
const catalog = new Map([
  ['orders', columns(['id', 'owner', 'total', 'created_at', 'updated_at', 'deleted_at'])],
  ['items', columns(['id', 'order_id', 'title'])],
]);
const filter: FilterFn = (_table, _op, q) => ({
  A_Expr: {
    kind: 'AEXPR_OP',
    name: [{ String: { sval: '=' } }],
    lexpr: { ColumnRef: { fields: [{ String: { sval: q } }, { String: { sval: 'id' } }] } },
    rexpr: { A_Const: { sval: { sval: 'u1' } } },
  },
});
const SERVICE_FUNCTIONS = new Set(['wds_row_check', 'uuidv7', 'now', 'starts_with', 'substr', 'regexp_replace', 'replace']);

const FRAGMENTS = ["'", "''", '"', '""', '/*', '*/', '--', '$$', '$a$', '\\', '\\\\', '\n', '\r', ';', ')', '(', ',', 'é', '😀', '\u2028', ' ', 'x', 'SELECT', 'pg_catalog', 'platform', 'ws_0190bbbb_', 'U&', 'E', '%s', '{', '}'];
const hostile = fc.array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 3 })), { minLength: 1, maxLength: 8 }).map((parts) => parts.join(''));

/** A quoted identifier holding hostile text (PostgreSQL truncates names past 63 bytes, so they stay short). */
const ident = hostile
  .filter((s) => s.length > 0 && !s.includes('\u0000') && Buffer.byteLength(s) <= 40)
  .map((s) => `"${s.replaceAll('"', '""')}"`);
/** A string literal in one of PostgreSQL's spellings. */
const literal = hostile
  .filter((s) => !s.includes('\u0000'))
  .chain((s) =>
    fc.constantFrom(
      `'${s.replaceAll("'", "''")}'`,
      `E'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`,
      s.includes('$q$') ? `'x'` : `$q$${s}$q$`,
    ),
  );

const TEMPLATES: ((id: string, lit: string, id2: string) => string)[] = [
  (id, lit) => `SELECT a.total AS ${id} FROM orders a JOIN items b USING (id) AS ${id} WHERE a.owner = ${lit}`,
  (id, lit) => `SELECT * FROM (orders o JOIN items i ON i.order_id = o.id) AS ${id} WHERE o.owner = ${lit}`,
  (id, lit) => `WITH ${id} AS (SELECT ${lit} AS v) SELECT v FROM ${id}`,
  (id, lit) => `WITH ${id} AS (SELECT owner FROM orders) SELECT owner FROM ${id} WHERE owner <> ${lit}`,
  (id, lit) => `SELECT row_number() OVER ${id}, ${lit} FROM orders WINDOW ${id} AS (ORDER BY id)`,
  (id, lit, id2) => `SELECT ${lit} AS ${id}, count(*) FILTER (WHERE total::text = ${lit}) AS ${id2} FROM orders ${id} GROUP BY 1`,
  (id, lit) => `INSERT INTO orders (owner) VALUES (${lit}) ON CONFLICT ON CONSTRAINT ${id} DO NOTHING`,
  (id, lit) => `INSERT INTO orders (owner) VALUES (${lit}) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner RETURNING owner AS ${id}`,
  (id, lit) => `UPDATE orders SET owner = ${lit} WHERE total::text = ${lit} RETURNING owner AS ${id}`,
  (id, lit) => `DELETE FROM items WHERE title = ${lit} RETURNING title AS ${id}`,
  (id, lit) => `SELECT ${id}.* FROM orders AS ${id}(a, b) WHERE ${id}.a::text <> ${lit}`,
  (id, lit) => `SELECT ${lit} COLLATE ${id}`,
  (id, lit) => `SELECT 1 OPERATOR(${id}.+) 2, ${lit}`,
  (id, lit, id2) => `CREATE TABLE t (${id} text DEFAULT ${lit}, CONSTRAINT ${id2} CHECK (${id} <> ${lit}))`,
  (id, lit) => `CREATE INDEX ${id} ON orders (owner) WITH (fillfactor = ${lit})`,
  (id, lit) => `CREATE TABLE t (a text OPTIONS (${id} ${lit}))`,
  (id, lit) => `SELECT ${lit}::text AS ${id} FROM orders ORDER BY 1 USING OPERATOR(pg_catalog.<)`,
  (id, lit) => `SELECT x FROM (VALUES (${lit})) AS ${id}(x)`,
];

/** Every node of a tree, without recursion. */
function* nodes(tree: unknown): Generator<[string, Record<string, unknown>]> {
  const stack: unknown[] = [tree];
  while (stack.length) {
    const v = stack.pop();
    if (Array.isArray(v)) for (const x of v) stack.push(x);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (/^[A-Z]/.test(k) && x && typeof x === 'object' && !Array.isArray(x)) yield [k, x as Record<string, unknown>];
        stack.push(x);
      }
    }
  }
}

const stringsOf = (tree: unknown): string[] =>
  [...nodes(tree)].filter(([tag, n]) => tag === 'A_Const' && n.sval).map(([, n]) => (n.sval as { sval?: string }).sval ?? '');

function checkExecuted(userSql: string, executed: string, filtered: boolean) {
  const tree = parseSync(executed);
  expect(tree.stmts).toHaveLength(1);
  const ctes = new Set([...nodes(tree)].filter(([tag]) => tag === 'CommonTableExpr').map(([, n]) => n.ctename));
  let tables = 0;
  for (const [tag, n] of nodes(tree)) {
    if (tag === 'RangeVar') {
      if (n.schemaname === undefined && ctes.has(n.relname)) continue;
      expect(n.schemaname, executed).toBe('user_data');
      expect(String(n.relname).startsWith(PREFIX), executed).toBe(true);
      tables++;
    }
    if (tag === 'FuncCall') {
      const name = (n.funcname as { String: { sval: string } }[]).map((p) => p.String.sval);
      const last = name.at(-1) as string;
      expect(ALLOWED_FUNCTIONS.has(last) || SERVICE_FUNCTIONS.has(last), executed).toBe(true);
      if (name.length === 2) expect(['pg_catalog', 'user_data'], executed).toContain(name[0]);
    }
  }
  // Every table reference is under the caller's filter: each carries its constant 'u1' at least once (a read in
  // its fenced subquery, a write in its WHERE or row check), so there are at least as many as tables (DDL aside).
  const after = stringsOf(tree);
  const ddl = /^(CREATE|ALTER|DROP)\b/i.test(userSql.trimStart());
  if (filtered && !ddl) expect(after.filter((x) => x === 'u1').length, executed).toBeGreaterThanOrEqual(tables);
  // Every string the user wrote is still a string (none turned into code), in the same number.
  const before = stringsOf(parseSync(userSql)).sort();
  for (const s of before) {
    const i = after.indexOf(s);
    expect(i, `string ${JSON.stringify(s)} of ${userSql} missing from ${executed}`).toBeGreaterThanOrEqual(0);
    after.splice(i, 1);
  }
}

beforeAll(loadParser);

describe('the executed text is exactly the analysed statement', () => {
  it.each(TEMPLATES.map((t, i) => [i, t] as const))('template %i with hostile names and literals', (_i, template) => {
    fc.assert(
      fc.property(ident, literal, ident, (id, lit, id2) => {
        const userSql = template(id, lit, id2);
        for (const opts of [{ workspaceId: WS, catalog }, { workspaceId: WS, catalog, filter }]) {
          let executed: string;
          try {
            executed = rewrite(analyze(userSql), opts);
          } catch (err) {
            if (!(err instanceof ServiceError)) throw err;
            expect(err.status).toBeLessThan(500);
            continue;
          }
          checkExecuted(userSql, executed, 'filter' in opts);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('refuses text that reads back as something else, and lets equal text through', () => {
    const stmt = parseSync('SELECT 1 AS a').stmts[0].stmt;
    expect(() => assertRoundTrip(stmt, 'SELECT 1 AS a')).not.toThrow();
    expect(() => assertRoundTrip(stmt, 'SELECT 1 AS b')).toThrow(ServiceError);
    expect(() => assertRoundTrip(stmt, 'SELECT 1 AS a; SELECT 2')).toThrow(ServiceError);
    expect(() => assertRoundTrip(stmt, 'SELECT 1 AS a /*')).toThrow(ServiceError);
    expect(() => assertRoundTrip(stmt, 'SELECT 1 AS a --')).not.toThrow();
  });

  it('compares trees without recursion and ignores only positions and flattened ANDs', () => {
    const wide = parseSync(`SELECT 1 WHERE 1 IN (${Array.from({ length: 150_000 }, (_, i) => i).join(',')})`).stmts[0].stmt;
    expect(firstDifference(wide, structuredClone(wide))).toBeUndefined();
    const a = parseSync('SELECT 1 WHERE (x AND y) AND z').stmts[0].stmt;
    const b = parseSync('SELECT 1 WHERE x AND (y AND z)').stmts[0].stmt;
    expect(firstDifference(a, b)).toBeUndefined();
    const c = parseSync('SELECT 1 WHERE x AND (y OR z)').stmts[0].stmt;
    expect(firstDifference(a, c)).toBeDefined();
  });
});
