import { beforeAll, describe, expect, it } from 'vitest';
import { type FilterFn, analyze, loadParser, rewrite } from '../src/index.js';
import { columns } from './catalog.js';

beforeAll(loadParser);

/** Statements members write every day: the rule table must keep every one of them analysable. */
const VALID: string[] = [
  // queries
  'SELECT * FROM orders',
  'TABLE orders',
  'SELECT * FROM ONLY orders',
  'VALUES (1, 2), (3, 4)',
  "SELECT o.id, i.name FROM orders o JOIN items i ON i.order_id = o.id LEFT JOIN items j USING (id) WHERE o.total > 10 AND i.name LIKE 'a%'",
  'SELECT * FROM orders NATURAL FULL JOIN items CROSS JOIN LATERAL (SELECT 1 AS one) l',
  'SELECT * FROM (orders o JOIN items i ON true) AS j',
  'SELECT DISTINCT ON (owner) owner, total FROM orders ORDER BY owner, total DESC NULLS LAST LIMIT 10 OFFSET 5',
  'SELECT owner, count(*) FILTER (WHERE total > 1), sum(total) FROM orders GROUP BY owner HAVING count(*) > 1',
  'SELECT owner, GROUPING(owner) FROM orders GROUP BY ROLLUP (owner), CUBE (total), GROUPING SETS ((owner), ())',
  'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total), string_agg(DISTINCT owner, \',\' ORDER BY owner) FROM orders',
  'SELECT id, row_number() OVER w, rank() OVER (PARTITION BY owner ORDER BY total ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES), lag(total) OVER w FROM orders WINDOW w AS (ORDER BY created_at)',
  'SELECT * FROM orders ORDER BY total FETCH FIRST 3 ROWS ONLY',
  'SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 EXCEPT ALL SELECT 4 ORDER BY 1',
  '(SELECT id FROM orders) UNION ALL (SELECT id FROM items)',
  'WITH a AS (SELECT * FROM orders), b AS MATERIALIZED (SELECT * FROM a) SELECT * FROM b',
  'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT * FROM r',
  'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SEARCH DEPTH FIRST BY n SET ord SELECT * FROM r LIMIT 3',
  'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) CYCLE n SET is_cycle USING path SELECT * FROM r LIMIT 3',
  'WITH d AS (DELETE FROM items WHERE id = 1 RETURNING *) SELECT count(*) FROM d',
  'SELECT (SELECT max(total) FROM orders), EXISTS (SELECT 1 FROM items), ARRAY(SELECT id FROM items)',
  'SELECT * FROM orders WHERE id IN (SELECT order_id FROM items) AND total = ANY (ARRAY[1, 2]) AND total <> ALL (SELECT 3)',
  "SELECT CASE WHEN total > 1 THEN 'big' WHEN total IS NULL THEN 'none' ELSE 'small' END, COALESCE(owner, 'x'), NULLIF(total, 0), GREATEST(1, total), LEAST(1, 2) FROM orders",
  "SELECT total::int, CAST(total AS numeric(10, 2)), '{1,2}'::int[], meta -> 'a' ->> 'b', meta #> '{a,b}', meta @> '{}'::jsonb, meta ? 'a' FROM orders",
  "SELECT a[1], a[1:2], (r).f, (r).* FROM (SELECT ARRAY[1, 2] AS a, ROW(1, 2) AS r) s",
  "SELECT owner IS DISTINCT FROM 'x', total BETWEEN SYMMETRIC 1 AND 2, owner ILIKE 'a%', owner SIMILAR TO 'a%', owner LIKE 'a!%' ESCAPE '!', total IS NOT TRUE FROM orders",
  "SELECT now(), current_date, current_timestamp(3), localtimestamp, extract(epoch FROM created_at), date_trunc('day', created_at), created_at AT TIME ZONE 'UTC', now() - interval '1 day' FROM orders",
  "SELECT substring(owner FROM 1 FOR 2), trim(BOTH 'x' FROM owner), position('a' IN owner), overlay(owner PLACING 'b' FROM 1), lower(owner) COLLATE \"C\" FROM orders",
  "SELECT to_tsvector('english', owner) @@ plainto_tsquery('english', 'x') FROM orders",
  "SELECT * FROM jsonb_to_recordset('[{\"a\": 1}]') AS x(a int, b text)",
  "SELECT * FROM ROWS FROM (generate_series(1, 2), unnest(ARRAY['a', 'b'])) WITH ORDINALITY AS x(n, s, i)",
  "SELECT e.* FROM orders CROSS JOIN LATERAL jsonb_each_text(meta) e",
  "SELECT format('%s-%s', owner, total), make_interval(days => 1) FROM orders",
  "SELECT xmlelement(name x, xmlattributes(owner AS o), 'c'), xmlforest(owner, total), xmlserialize(content '<x/>'::xml AS text) FROM orders",
  'SELECT table_name, column_name FROM information_schema.columns ORDER BY 1, 2',
  // writes
  "INSERT INTO orders (owner, total) VALUES ('a', 1), ('b', DEFAULT) RETURNING id",
  'INSERT INTO orders (owner) SELECT name FROM items WHERE id > 1',
  "INSERT INTO items (id, name) VALUES (1, 'a') ON CONFLICT (id) DO UPDATE SET name = excluded.name WHERE items.name IS DISTINCT FROM excluded.name",
  "INSERT INTO items (id, name) VALUES (1, 'a') ON CONFLICT (id) WHERE id > 0 DO NOTHING",
  "INSERT INTO items (id) VALUES (1) ON CONFLICT ON CONSTRAINT items_pkey DO NOTHING",
  "INSERT INTO items AS i (id) OVERRIDING SYSTEM VALUE VALUES (1) ON CONFLICT (id) DO UPDATE SET (name, order_id) = (excluded.name, 1)",
  "UPDATE orders SET total = total + 1, owner = DEFAULT WHERE id = 1 RETURNING *",
  'UPDATE orders o SET total = i.id FROM items i WHERE i.order_id = o.id',
  'UPDATE orders SET (owner, total) = (SELECT name, id FROM items LIMIT 1)',
  'DELETE FROM orders WHERE total < 0 RETURNING id',
  'DELETE FROM orders USING items WHERE items.order_id = orders.id',
  'WITH x AS (SELECT id FROM items) UPDATE orders SET total = 0 WHERE id IN (SELECT id FROM x)',
  // DDL
  'CREATE TABLE t (a int PRIMARY KEY, b text NOT NULL DEFAULT \'x\', c numeric(10, 2) CHECK (c >= 0), d timestamptz DEFAULT now(), e jsonb, f uuid UNIQUE, g text[])',
  'CREATE TABLE IF NOT EXISTS t (a int, b int, CONSTRAINT t_pk PRIMARY KEY (a, b), CONSTRAINT t_b UNIQUE NULLS NOT DISTINCT (b), CONSTRAINT t_chk CHECK (a < b) NOT VALID)',
  'CREATE TABLE t (a int GENERATED ALWAYS AS IDENTITY (START 10 INCREMENT BY 5 CACHE 1 NO CYCLE), b bigserial, c int GENERATED BY DEFAULT AS IDENTITY)',
  'CREATE TABLE t (a int, b int GENERATED ALWAYS AS (a * 2) STORED)',
  'CREATE TABLE t (a uuid REFERENCES orders (id) ON DELETE CASCADE ON UPDATE SET NULL, b uuid, FOREIGN KEY (b) REFERENCES items MATCH FULL DEFERRABLE INITIALLY DEFERRED)',
  'CREATE TABLE t (a text COLLATE "C", b tsrange, EXCLUDE USING gist (b WITH &&) WHERE (a IS NOT NULL))',
  'CREATE TABLE t (a int) WITH (fillfactor = 70)',
  'CREATE TABLE t (a text COMPRESSION lz4)',
  'CREATE INDEX by_total ON orders (total)',
  'CREATE UNIQUE INDEX IF NOT EXISTS by_owner ON orders (owner) INCLUDE (total) WHERE deleted_at IS NULL',
  'CREATE INDEX by_name ON items (name COLLATE "C" text_pattern_ops DESC NULLS LAST, (lower(name)))',
  'CREATE INDEX by_meta ON orders USING gin (meta jsonb_path_ops) WITH (fastupdate = off)',
  'CREATE INDEX by_created ON orders USING brin (created_at) WITH (pages_per_range = 16)',
  'CREATE INDEX by_total2 ON orders USING btree (total) WITH (fillfactor = 90, deduplicate_items = on)',
  'CREATE INDEX by_hash ON orders USING hash (owner)',
  'ALTER TABLE orders ADD COLUMN note text DEFAULT \'\' NOT NULL',
  'ALTER TABLE orders ADD COLUMN IF NOT EXISTS n int GENERATED ALWAYS AS IDENTITY',
  'ALTER TABLE orders DROP COLUMN IF EXISTS note CASCADE',
  'ALTER TABLE orders ALTER COLUMN total TYPE numeric(12, 2) USING total::numeric',
  'ALTER TABLE orders ALTER COLUMN owner TYPE varchar(40) COLLATE "C"',
  'ALTER TABLE orders ALTER COLUMN total SET DEFAULT 0, ALTER COLUMN owner DROP DEFAULT',
  'ALTER TABLE orders ALTER COLUMN owner SET NOT NULL, ALTER COLUMN total DROP NOT NULL',
  'ALTER TABLE orders ADD CONSTRAINT positive CHECK (total > 0) NOT VALID',
  'ALTER TABLE orders VALIDATE CONSTRAINT positive',
  'ALTER TABLE orders DROP CONSTRAINT IF EXISTS positive',
  'ALTER TABLE items ADD CONSTRAINT items_order FOREIGN KEY (order_id) REFERENCES orders (id)',
  'ALTER TABLE items ADD CONSTRAINT items_name UNIQUE USING INDEX by_name',
  'ALTER TABLE orders RENAME TO purchases',
  'ALTER TABLE orders RENAME COLUMN owner TO customer',
  'ALTER TABLE orders RENAME CONSTRAINT positive TO nonnegative',
  'ALTER INDEX by_total RENAME TO by_amount',
  'DROP TABLE orders',
  'DROP TABLE IF EXISTS orders, items CASCADE',
  'DROP INDEX IF EXISTS by_total',
];

const WS = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee';
const catalog = new Map([
  ['orders', columns(['id', 'owner', 'total', 'meta', 'created_at', 'updated_at', 'deleted_at'])],
  ['items', columns(['id', 'order_id', 'name'])],
]);
const filter: FilterFn = (_table, _op, q) => ({
  A_Expr: {
    kind: 'AEXPR_OP',
    name: [{ String: { sval: '=' } }],
    lexpr: { ColumnRef: { fields: [{ String: { sval: q } }, { String: { sval: 'owner' } }] } },
    rexpr: { A_Const: { sval: { sval: 'u1' } } },
  },
});

describe('representative valid statements still analyse, and their rewrite survives the round trip', () => {
  it.each(VALID)('%s', (sql) => {
    expect(() => analyze(sql)).not.toThrow();
    // rewrite() re-parses what it prints (verify.ts): these must all come back unchanged.
    expect(() => rewrite(analyze(sql), { workspaceId: WS, catalog, filter })).not.toThrow();
  });
});
