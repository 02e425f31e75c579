// Cost of row capture (issue 19) on the write path: INSERT of 1 and of 100 rows, UPDATE of one row, through
// WorkspaceSql.execute (the SQL endpoint's path without HTTP), on two identical tables in one run — one with its
// capture triggers, the baseline with them disabled. Prints medians and the ratio. Sequential (one client) and with
// 8 clients at once (the NOTIFY of each committing statement is serialised by PostgreSQL).
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase, startTestPostgres } from '@wds/testkit';
import { WorkspaceSql } from '@wds/workspace-sql';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 400);
const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'bench_capture' });
const { db, pool } = createDb(url, { max: 4 });
await migrateToLatest(db);
const ws = newId();
const user = newId();
await db.insertInto('platform.users').values({ id: user, email: `${user}@bench.io`, name: 'b' }).execute();
await db.insertInto('platform.workspaces').values({ id: ws, name: 'bench' }).execute();
const sql = new WorkspaceSql(pool, { databaseUrl: url, pools: { maxPerWorkspace: 8 } });
const caller = { workspaceId: ws, ddlGroupId: null, isAdmin: true, subject: { kind: 'user', userId: user } };
const limits = { statementTimeoutMs: 10_000, maxRows: 1000 };
const group = newId();
await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, ws, 'all', [user]]);
for (const t of ['captured', 'baseline']) {
  await sql.execute(caller, `CREATE TABLE ${t} (owner_id uuid, title text, total numeric, status text)`, limits);
  await sql.execute(caller, `CREATE INDEX ${t}_title ON ${t} (title)`, limits);
  for (const op of ['select', 'insert', 'update', 'delete']) {
    await pool.query(
      "INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation, condition) VALUES ($1, $2, $3, $4, 'allow', $5, $6, $7)",
      [newId(), ws, group, `${t}-${op}`, t, op, JSON.stringify({ owner_id: '$user_id' })],
    );
  }
}
const physical = `user_data.ws_${ws.replace(/-/g, '_')}_baseline`;
await pool.query(`ALTER TABLE ${physical} DISABLE TRIGGER USER`);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function time(make, clients) {
  const per = Math.floor(ROUNDS / clients);
  const t = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < per; i++) {
        const text = make(c * per + i);
        const s = process.hrtime.bigint();
        await sql.execute(caller, text, limits);
        t.push(Number(process.hrtime.bigint() - s) / 1e6);
      }
    }),
  );
  return median(t);
}
const values = (n, i) => Array.from({ length: n }, (_, k) => `('${user}', 'item ${i}-${k}', ${k}.50, 'open')`).join(', ');
const cases = {
  'INSERT 1 row': (t) => (i) => `INSERT INTO ${t} (owner_id, title, total, status) VALUES ${values(1, i)}`,
  'INSERT 100 rows': (t) => (i) => `INSERT INTO ${t} (owner_id, title, total, status) VALUES ${values(100, i)}`,
  'UPDATE 1 row': (t) => (i) => `UPDATE ${t} SET total = ${i} WHERE title = 'item ${i}-0'`,
};
console.log(`row capture on the write path: median ms per statement (${ROUNDS} statements a case)`);
console.log('case                 clients  captured  baseline  ratio');
for (const clients of [1, 8]) {
  for (const [name, make] of Object.entries(cases)) {
    // Alternate which table goes first, so neither profits from a warmer cache.
    const a1 = await time(make('baseline'), clients);
    const c = await time(make('captured'), clients);
    const a2 = await time(make('baseline'), clients);
    const base = (a1 + a2) / 2;
    console.log(`${name.padEnd(20)} ${String(clients).padStart(7)}  ${c.toFixed(3).padStart(8)}  ${base.toFixed(3).padStart(8)}  ${(c / base).toFixed(2)}×`);
  }
}
const { rows } = await pool.query('SELECT count(*)::int AS n FROM platform.row_changes');
console.log(`captured rows: ${rows[0].n}`);
await sql.close();
await db.destroy();
await server.stop();
