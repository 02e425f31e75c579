// Rewrite cost per statement: parse → checks → policy decision → compile → inject → deparse → re-parse and compare
// (the executed text must be exactly the rewritten tree). Baseline in the same run: parse + deparse alone (what any
// SQL proxy pays at least). The re-parse column is the parse of the rewritten text alone, a part of "ours".
import { compileFilter, decide } from '@wds/policy-engine';
import { analyze, loadParser, parseSqlTree, rewrite } from '@wds/sql-rewriter';
import { loadModule, parseSync } from 'libpg-query';
import { deparseSync } from 'pgsql-deparser';

const WS = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee';
const USER = '0190aaaa-bbbb-7ccc-8ddd-000000000001';
const catalog = new Map(
  ['orders', 'customers', 'items', 'tickets'].map((t) => [t, new Set(['id', 'owner_id', 'status', 'total', 'created_at', 'updated_at', 'deleted_at', 'customer_id', 'order_id', 'title'])]),
);
const groups = [{ id: 'g1', user_ids: [USER], stf_ids: [] }];
const policies = ['orders', 'customers', 'items', 'tickets'].flatMap((t) =>
  ['select', 'insert', 'update', 'delete'].flatMap((op) => [
    { id: `${t}-${op}`, name: 'own', policy_group_id: 'g1', mode: 'allow', table_name: t, operation: op, condition: { owner_id: '$user_id' } },
    { id: `${t}-${op}-pub`, name: 'open', policy_group_id: 'g1', mode: 'allow', table_name: t, operation: op, condition: { status: { $in: ['open', 'public'] } } },
    { id: `${t}-${op}-deny`, name: 'no secret', policy_group_id: 'g1', mode: 'deny', table_name: t, operation: op, condition: { status: 'secret' } },
  ]),
);
const corpus = [
  "SELECT * FROM orders WHERE id = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee'",
  'SELECT id, total FROM orders ORDER BY created_at DESC LIMIT 50',
  'SELECT c.id, count(o.id) AS n, sum(o.total) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id HAVING count(o.id) > 2',
  "WITH recent AS (SELECT * FROM orders WHERE created_at > now() - interval '7 days') SELECT status, count(*) FROM recent GROUP BY status",
  'SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE status = $$vip$$)',
  'SELECT id, total, rank() OVER (PARTITION BY customer_id ORDER BY total DESC) FROM orders',
  "SELECT title FROM tickets WHERE status = 'open' UNION ALL SELECT title FROM items",
  "INSERT INTO orders (owner_id, customer_id, total, status) VALUES ('0190aaaa-bbbb-7ccc-8ddd-000000000001', '0190aaaa-bbbb-7ccc-8ddd-000000000002', 12.5, 'open')",
  "UPDATE orders SET status = 'shipped' WHERE id = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee' RETURNING id, status",
  "DELETE FROM tickets WHERE status = 'closed' AND created_at < now() - interval '1 year'",
  "INSERT INTO items (order_id, title) SELECT id, 'gift' FROM orders WHERE total > 100 ON CONFLICT (id) DO NOTHING",
  'UPDATE orders o SET total = o.total * 1.1 FROM customers c WHERE c.id = o.customer_id AND c.status = $$vip$$',
];

function timeIt(fn, iterations) {
  for (let i = 0; i < 300; i++) fn();
  const t = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const s = process.hrtime.bigint();
    fn();
    t[i] = Number(process.hrtime.bigint() - s) / 1e6;
  }
  t.sort();
  return { median: t[Math.floor(iterations / 2)], p99: t[Math.floor(iterations * 0.99)] };
}

const ours = (sql) => () => {
  const a = analyze(sql);
  return rewriteFor(a);
};
const rewriteFor = (a) => {
  const decisions = new Map(a.access.map(({ table, operation }) => [`${table}:${operation}`, decide({ policies, groups, subject: { kind: 'user', userId: USER }, table, operation })]));
  const compiled = new Map();
  return rewrite(a, {
    workspaceId: WS,
    catalog,
    // As WorkspaceSql does: each (table, operation, qualifier) compiled once per statement.
    filter: (table, operation, qualifier) => {
      const key = `${table}:${operation}:${qualifier}`;
      if (!compiled.has(key)) {
        const d = decisions.get(`${table}:${operation}`);
        compiled.set(key, d?.allowed && d.filter ? compileFilter(d.filter, { qualifier, userId: USER }) : null);
      }
      return compiled.get(key);
    },
  });
};
const baseline = (sql) => () => deparseSync(parseSync(sql), { pretty: false });

await loadParser();
await loadModule(); // libpg-query's own instance, for the baseline
const N = Number(process.env.BENCH_ITERATIONS ?? 3000);
console.log(`Rewrite cost per statement (${N} runs each, after warm-up), milliseconds\n`);
console.log('statement'.padEnd(60), 'ours median', 'ours p99', 're-parse median', 'parse+deparse median', 'ratio');
const all = [];
for (const sql of corpus) {
  const o = timeIt(ours(sql), N);
  const executed = ours(sql)();
  const r = timeIt(() => parseSqlTree(executed), N);
  const b = timeIt(baseline(sql), N);
  all.push(o.median);
  console.log(
    sql.slice(0, 58).padEnd(60),
    o.median.toFixed(3).padStart(11),
    o.p99.toFixed(3).padStart(8),
    r.median.toFixed(3).padStart(15),
    b.median.toFixed(3).padStart(20),
    `${(o.median / b.median).toFixed(2)}x`.padStart(6),
  );
}
all.sort((x, y) => x - y);
const corpusTimes = timeIt(() => corpus.forEach((s) => ours(s)()), Math.floor(N / corpus.length));
console.log(`\nmedian of statement medians: ${all[Math.floor(all.length / 2)].toFixed(3)} ms (aim: < 0.2 ms)`);
console.log(`whole corpus of ${corpus.length}: median ${corpusTimes.median.toFixed(3)} ms, p99 ${corpusTimes.p99.toFixed(3)} ms`);
