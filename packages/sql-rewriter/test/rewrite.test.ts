import { beforeAll, describe, expect, it } from 'vitest';
import { type FilterFn, analyze, loadParser, rewrite, toLogicalText } from '../src/index.js';
import { columns } from './catalog.js';

const WS = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee';
const P = 'user_data.ws_0190aaaa_bbbb_7ccc_8ddd_eeeeeeeeeeee_';
const catalog = new Map([
  ['orders', columns(['id', 'owner', 'total', 'created_at', 'updated_at', 'deleted_at'])],
  ['items', columns(['id', 'order_id'])],
]);
const ownerFilter: FilterFn = (table, _op, q) =>
  table === 'orders'
    ? { A_Expr: { kind: 'AEXPR_OP', name: [{ String: { sval: '=' } }], lexpr: { ColumnRef: { fields: [{ String: { sval: q } }, { String: { sval: 'owner' } }] } }, rexpr: { A_Const: { sval: { sval: 'u1' } } } } }
    : null;
const run = (sql: string, filter: FilterFn | null = ownerFilter) =>
  rewrite(analyze(sql), { workspaceId: WS, catalog, ...(filter ? { filter } : {}) });

beforeAll(loadParser);

describe('rewrite: golden SQL', () => {
  it.each([
    ['SELECT * FROM items', `SELECT * FROM ${P}items AS items`],
    // Filtered reads are fenced (OFFSET 0): the user's WHERE never runs on a row before the filter did.
    ['SELECT * FROM orders o', `SELECT * FROM ( SELECT * FROM ${P}orders AS orders WHERE orders.owner = 'u1' AND orders.deleted_at IS NULL OFFSET 0 ) AS o`],
    [
      "SELECT * FROM orders WHERE total > 1 OR owner = 'x'",
      `SELECT * FROM ( SELECT * FROM ${P}orders AS orders WHERE orders.owner = 'u1' AND orders.deleted_at IS NULL OFFSET 0 ) AS orders WHERE total > 1 OR owner = 'x'`,
    ],
    // Simple predicates (column vs constant) are copied inside the fence, so an index can serve them.
    [
      "SELECT * FROM orders o WHERE o.id = 'x' AND total::int / 0 = 1 AND owner IS NOT NULL AND id IN ('a', 'b')",
      `SELECT * FROM ( SELECT * FROM ${P}orders AS orders WHERE (orders.owner = 'u1' AND orders.deleted_at IS NULL) AND orders.id = 'x' AND orders.owner IS NOT NULL AND orders.id IN ('a', 'b') OFFSET 0 ) AS o WHERE o.id = 'x' AND (total::int / 0) = 1 AND owner IS NOT NULL AND id IN ('a', 'b')`,
    ],
    // A write's WHERE runs only behind the filter (CASE), with simple predicates copied in front for the index.
    [
      'UPDATE orders SET total = 0 WHERE total > 1 OR true',
      `UPDATE ${P}orders AS orders SET total = 0, updated_at = now() WHERE (orders.owner = 'u1' AND orders.deleted_at IS NULL) AND CASE WHEN (orders.owner = 'u1' AND orders.deleted_at IS NULL) THEN (total > 1 OR true) ELSE false END RETURNING user_data.wds_row_check(orders.owner = 'u1', 'orders:update') AS __wds_check`,
    ],
    [
      'DELETE FROM orders WHERE total < 0',
      `UPDATE ${P}orders AS orders SET deleted_at = now(), updated_at = now() WHERE orders.total < 0 AND (orders.owner = 'u1' AND orders.deleted_at IS NULL) AND CASE WHEN (orders.owner = 'u1' AND orders.deleted_at IS NULL) THEN total < 0 ELSE false END`,
    ],
    ['DELETE FROM items WHERE id = 1', `DELETE FROM ${P}items AS items WHERE id = 1`],
    [
      "INSERT INTO orders (owner) VALUES ('u1')",
      `INSERT INTO ${P}orders AS orders (owner) VALUES ('u1') RETURNING user_data.wds_row_check(orders.owner = 'u1', 'orders:insert') AS __wds_check`,
    ],
    ['DROP TABLE orders', `DROP TABLE ${P}orders`],
    [
      'INSERT INTO items (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET id = 2',
      `INSERT INTO ${P}items AS items (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET id = 2`,
    ],
    [
      "INSERT INTO orders (id) VALUES ('a') ON CONFLICT (id) DO UPDATE SET deleted_at = NULL",
      `INSERT INTO ${P}orders AS orders (id) VALUES ('a') ON CONFLICT (id) DO UPDATE SET deleted_at = NULL, updated_at = now() WHERE orders.owner = 'u1' AND orders.deleted_at IS NULL RETURNING user_data.wds_row_check(CASE WHEN orders.xmax = 0 THEN orders.owner = 'u1' ELSE orders.owner = 'u1' END, 'orders:insert/update') AS __wds_check`,
    ],
    ['CREATE INDEX by_total ON orders (total)', `CREATE INDEX ws_0190aaaa_bbbb_7ccc_8ddd_eeeeeeeeeeee_by_total ON ${P}orders (total)`],
  ])('%s', (sql, expected) => {
    expect(run(sql)).toBe(expected);
  });

  it('preview (no filter) still maps names and keeps soft deletes', () => {
    expect(run('SELECT * FROM orders', null)).toBe(`SELECT * FROM ( SELECT * FROM ${P}orders AS orders WHERE orders.deleted_at IS NULL OFFSET 0 ) AS orders`);
  });

  it('CREATE TABLE gets the system columns, a user primary key keeps id unique', () => {
    expect(run('CREATE TABLE t (name text)')).toBe(
      `CREATE TABLE ${P}t (id uuid PRIMARY KEY DEFAULT user_data.uuidv7(), name text, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz)`,
    );
    expect(run('CREATE TABLE t (code text PRIMARY KEY, created_at date)')).toBe(
      `CREATE TABLE ${P}t (id uuid NOT NULL UNIQUE DEFAULT user_data.uuidv7(), code text PRIMARY KEY, created_at date, updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz)`,
    );
  });

  it('CTE names shadow tables only where PostgreSQL says they do', () => {
    expect(run('WITH items AS (SELECT 1 AS id) SELECT * FROM items')).toBe('WITH items AS (SELECT 1 AS id) SELECT * FROM items');
    // In a non-recursive CTE, its own name refers to the table: never left unmapped (it could reach the catalog).
    expect(run('WITH pg_class AS (SELECT * FROM pg_class) SELECT * FROM pg_class')).toBe(
      `WITH pg_class AS (SELECT * FROM ${P}pg_class AS pg_class) SELECT * FROM pg_class`,
    );
    expect(run('WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r')).toBe(
      // (each row the recursive term reads passes wds_cap, bounds.ts)
      'WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3 AND user_data.wds_cap(r.*)) SELECT * FROM r',
    );
  });
});

describe('analyze: classification and refusals', () => {
  it.each([
    ['SELECT 1; SELECT 2', 'MULTIPLE_STATEMENTS'],
    ['SELEC 1', 'PARSE_ERROR'],
    ['', 'PARSE_ERROR'],
    ['BEGIN', 'TRANSACTION_NOT_ALLOWED'],
    ['ROLLBACK', 'TRANSACTION_NOT_ALLOWED'],
    ['SET search_path = public', 'UNSUPPORTED'],
    ["SELECT set_config('role', 'postgres', true)", 'UNSUPPORTED'],
    ["SELECT pg_read_file('/etc/passwd')", 'UNSUPPORTED'],
    ["SELECT 'orders'::regclass", 'UNSUPPORTED'],
    ['SELECT * FROM pg_catalog.pg_class', 'SCHEMA_ACCESS_DENIED'],
    ['SELECT * FROM information_schema.routines', 'SCHEMA_ACCESS_DENIED'],
    ['SELECT * FROM user_data.orders', 'SCHEMA_ACCESS_DENIED'],
    ['SELECT * FROM abcdefghijklmnopqrstuvwxy', 'INVALID_TABLE'],
    ['SELECT current_user', 'UNSUPPORTED'],
    ['COPY orders TO STDOUT', 'UNSUPPORTED'],
    ['SELECT * FROM orders FOR UPDATE', 'UNSUPPORTED'],
    ['CREATE TEMP TABLE t (x int)', 'UNSUPPORTED'],
    ['ALTER TABLE orders OWNER TO postgres', 'UNSUPPORTED'],
    ['DROP SCHEMA user_data', 'UNSUPPORTED'],
    ['MERGE INTO orders USING items ON true WHEN MATCHED THEN DELETE', 'UNSUPPORTED'],
    ['SELECT 1 AS a\u0000; SELECT * FROM pg_catalog.pg_class', 'PARSE_ERROR'],
    ['SELECT count(*) FROM items GROUP BY DISTINCT id', 'UNSUPPORTED'],
  ])('%s → %s', (sql, code) => {
    expect(() => analyze(sql)).toThrow(expect.objectContaining({ code }));
  });

  it('collects every table with the operations it needs', () => {
    const a = analyze('WITH d AS (DELETE FROM items RETURNING *) UPDATE orders SET total = 1 FROM d WHERE true RETURNING orders.id');
    expect(a.kind).toBe('update');
    expect(a.writes).toBe(true);
    expect([...a.tables].sort()).toEqual(['items', 'orders']);
    expect(a.access).toEqual(expect.arrayContaining([
      { table: 'items', operation: 'delete' },
      { table: 'items', operation: 'select' },
      { table: 'orders', operation: 'update' },
      { table: 'orders', operation: 'select' },
    ]));
    expect(a.access).toHaveLength(4);
  });
});

describe('rewrite: refusals', () => {
  it('a construct the deparser cannot print is UNSUPPORTED, never a crash', () => {
    expect(() => run("SELECT JSON_VALUE(meta, '$.s') FROM items")).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }));
  });
});

describe('toLogicalText', () => {
  it('hides physical names and roles', () => {
    expect(toLogicalText('relation "user_data.ws_0190aaaa_bbbb_7ccc_8ddd_eeeeeeeeeeee_orders" does not exist')).toBe('relation "orders" does not exist');
    expect(toLogicalText('permission denied for role wds_ws_0190aaaabbbb7ccc8dddeeeeeeeeeeee')).toBe('permission denied for role workspace role');
  });
});

describe('information_schema is fenced like a filtered table', () => {
  it("the user's WHERE runs outside the workspace's scope (OFFSET 0), never on another schema's rows", () => {
    const sql = run("SELECT column_name FROM information_schema.columns WHERE column_name::int = 1 AND table_name = 'orders'");
    const fence = sql.indexOf(' OFFSET 0 )');
    expect(fence).toBeGreaterThan(0);
    expect(sql.indexOf('column_name::int = 1')).toBeGreaterThan(fence);
    expect(sql.slice(0, fence)).not.toContain("'orders'");
  });
});
