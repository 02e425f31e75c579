import '@wds/testkit';
import { createHash } from 'node:crypto';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WorkspaceConnector, WorkspaceSql } from '../src/index.js';
import { visibleRowsForStatement, visibleRowsStatement } from '../src/row-capture.js';

let pool: pg.Pool;
let url: string;
let sql: WorkspaceSql;
let destroy: () => Promise<void>;
const A = newId();
const B = newId();
const owner = newId();
const reader = newId();

beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'rowcap' });
  const { db, pool: p } = createDb(url, { max: 4 });
  await migrateToLatest(db);
  await db.insertInto('platform.users').values([{ id: owner, email: `${owner}@x.io`, name: 'o' }, { id: reader, email: `${reader}@x.io`, name: 'r' }]).execute();
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
  pool = p;
  sql = new WorkspaceSql(pool, { databaseUrl: url });
  destroy = () => db.destroy();
});
afterAll(async () => {
  await sql.close();
  await destroy();
});

const admin = (workspaceId: string) => ({ workspaceId, ddlGroupId: null, isAdmin: true, subject: { kind: 'user' as const, userId: owner } });
const as = (workspaceId: string, userId: string) => ({ workspaceId, ddlGroupId: null, isAdmin: false, subject: { kind: 'user' as const, userId } });
const limits = { statementTimeoutMs: 5000, maxRows: 100 };

interface Change {
  batch: string;
  table_name: string;
  op: string;
  row: Record<string, unknown> | null;
  old: Record<string, unknown> | null;
}
const ownerGroups = new Map<string, string>();
/** Every operation on `table` for the owner. */
async function allowAll(workspaceId: string, table: string): Promise<void> {
  let group = ownerGroups.get(workspaceId);
  if (!group) {
    group = newId();
    ownerGroups.set(workspaceId, group);
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, workspaceId, 'owner', [owner]]);
  }
  for (const op of ['select', 'insert', 'update', 'delete']) {
    await pool.query(
      `INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation) VALUES ($1, $2, $3, $4, 'allow', $5, $6)`,
      [newId(), workspaceId, group, `${table}-${op}`, table, op],
    );
  }
}
/** CREATE TABLE with every right for the owner. */
async function table(workspaceId: string, name: string, columns: string): Promise<void> {
  await sql.execute(admin(workspaceId), `CREATE TABLE ${name} (${columns})`, limits);
  await allowAll(workspaceId, name);
}

const changes = async (workspaceId: string, table: string): Promise<Change[]> =>
  (
    await pool.query<Change>('SELECT batch, table_name, op, row, old FROM platform.row_changes WHERE workspace_id = $1 AND table_name = $2 ORDER BY id', [
      workspaceId,
      table,
    ])
  ).rows;

describe('row capture', () => {
  it('records what every statement changed, under the logical name, and notifies its batch at commit', async () => {
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    const batches: string[] = [];
    listener.on('notification', (n) => n.channel === 'wds_row_changes' && n.payload && batches.push(n.payload));
    await listener.query('LISTEN wds_row_changes');
    /** The database's clock in whole seconds, as the capture stamps its notifications. */
    const dbSeconds = async () => Number((await pool.query<{ s: string }>('SELECT floor(extract(epoch FROM clock_timestamp()))::bigint::text AS s')).rows[0]?.s);
    try {
      await table(A, 'items', 'name text, qty int');
      const from = await dbSeconds();
      await sql.execute(admin(A), "INSERT INTO items (name, qty) VALUES ('a', 1), ('b', 2)", limits);
      await sql.execute(admin(A), "UPDATE items SET qty = qty + 10 WHERE name = 'a'", limits);
      await sql.execute(admin(A), "DELETE FROM items WHERE name = 'b'", limits);
      await sql.execute(admin(A), "UPDATE items SET qty = 0 WHERE name = 'nobody'", limits); // no row: no batch
      const c = await changes(A, 'items');
      expect(c.map((x) => [x.op, x.row?.name ?? null, x.row?.qty ?? null, x.old?.qty ?? null])).toEqual([
        ['insert', 'a', 1, null],
        ['insert', 'b', 2, null],
        ['update', 'a', 11, 1],
        ['delete', null, null, 2], // a soft delete (the table has deleted_at)
      ]);
      expect(c[0]?.row).toMatchObject({ id: expect.any(String), created_at: expect.any(String), deleted_at: null });
      await expect.poll(() => batches.length).toBe(3);
      // Signed with the capture key (migration 0017), which realtime checks: `<workspace>:<batch>:<seconds>:<mac>`.
      const key = (await pool.query<{ key: string }>('SELECT key FROM platform.row_capture_key')).rows[0]?.key;
      const mac = (batch: string, at: string) => createHash('sha256').update(`${key}:${A}:${batch}:${at}`).digest('hex').slice(0, 32);
      const sent = batches.map((p) => p.split(':'));
      const to = await dbSeconds();
      expect(new Set(sent.map(([ws, batch]) => `${ws}:${batch}`))).toEqual(new Set(c.map((x) => `${A}:${x.batch}`)));
      for (const [, batch, at, m] of sent) {
        expect(m).toBe(mac(batch as string, at as string));
        expect(Number(at)).toBeGreaterThanOrEqual(from); // sent at commit, by the database's clock
        expect(Number(at)).toBeLessThanOrEqual(to);
      }
    } finally {
      await listener.end();
    }
  });

  it('a statement that rolls back leaves nothing; an STF session is captured when it commits', async () => {
    await table(A, 'notes', 'body text');
    const failing = await sql.openSession(admin(A), limits);
    await failing.query("INSERT INTO notes (body) VALUES ('rolled back')");
    await failing.end(false);
    await expect(sql.execute(admin(A), "INSERT INTO notes (body) VALUES ('x'), (NULL::int::text || 1/0)", limits)).rejects.toThrow();
    expect(await changes(A, 'notes')).toEqual([]);
    const session = await sql.openSession(admin(A), limits);
    await session.query("INSERT INTO notes (body) VALUES ('kept')");
    await session.end(true);
    expect((await changes(A, 'notes')).map((c) => c.row?.body)).toEqual(['kept']);
  });

  it("the service's own writes are not captured; a renamed table is captured under its new name", async () => {
    await table(A, 'docs', 'title text');
    await allowAll(A, 'papers');
    await sql.writeAsWorkspace(A, [{ text: `INSERT INTO user_data.ws_${A.replace(/-/g, '_')}_docs (title) VALUES ('service')` }]);
    expect(await changes(A, 'docs')).toEqual([]);
    await sql.execute(admin(A), 'ALTER TABLE docs RENAME TO papers', limits);
    await sql.execute(admin(A), "INSERT INTO papers (title) VALUES ('after')", limits);
    expect((await changes(A, 'papers')).map((c) => c.row?.title)).toEqual(['after']);
  });

  it('any column names: the function\'s own (op, ws, b, flagged, logical) and its row aliases (x, y, n_, o_) neither break nor forge a capture', async () => {
    await table(A, 'names', 'op text, ws text, b int, flagged boolean, logical text, n bigint, x jsonb, y jsonb, n_ jsonb, o_ jsonb');
    const forged = `'{"id": "00000000-0000-4000-8000-0000000000aa", "secret": "forged"}'`;
    await sql.execute(admin(A), `INSERT INTO names (op, ws, b, flagged, logical, n, x, y, n_, o_) VALUES ('o', 'w', 1, true, 'l', 2, ${forged}, ${forged}, ${forged}, ${forged})`, limits);
    await sql.execute(admin(A), 'UPDATE names SET b = b + 1', limits);
    await sql.execute(admin(A), 'DELETE FROM names', limits);
    const c = await changes(A, 'names');
    expect(c.map((x) => x.op)).toEqual(['insert', 'update', 'delete']);
    // Each image is the row, never one of its columns.
    expect(c[0]?.row).toMatchObject({ op: 'o', b: 1, x: { secret: 'forged' } });
    expect(c[1]?.row).toMatchObject({ op: 'o', b: 2 });
    expect(c[1]?.old).toMatchObject({ op: 'o', b: 1 });
    expect(c[2]?.old).toMatchObject({ op: 'o', b: 2 });
    for (const image of [c[0]?.row, c[1]?.row, c[1]?.old, c[2]?.old]) expect((image as { id: string }).id).not.toBe('00000000-0000-4000-8000-0000000000aa');
  });

  it("an update never fails for the table's id: one of another type, or none", async () => {
    await table(A, 'odd', 'id jsonb, v int');
    await sql.execute(admin(A), `INSERT INTO odd (id, v) VALUES ('{"k":1}', 1), ('{"k":1}', 2)`, limits);
    await sql.execute(admin(A), 'UPDATE odd SET v = v + 1', limits);
    const updates = (await changes(A, 'odd')).filter((c) => c.op === 'update');
    expect(updates.map((c) => c.row?.v).sort()).toEqual([2, 3]);
    // Two rows with one id: neither new row is paired with an old image (it could be the other row's).
    expect(updates.map((c) => c.old)).toEqual([null, null]);
    // An id of one row only is paired, whatever its type.
    await sql.execute(admin(A), `UPDATE odd SET id = '{"k":2}' WHERE v = 3`, limits);
    await sql.execute(admin(A), 'UPDATE odd SET v = v * 10', limits);
    const last = (await changes(A, 'odd')).filter((c) => c.op === 'update').slice(-2);
    expect(last.map((c) => [c.row?.v, c.old?.v ?? null]).sort()).toEqual([[20, 2], [30, 3]]);
    await sql.execute(admin(A), 'ALTER TABLE odd DROP COLUMN id', limits);
    await expect(sql.execute(admin(A), 'UPDATE odd SET v = 0', limits)).resolves.toMatchObject({ affected_rows: 2 });
  });

  it('a raw session of the workspace role cannot write the outbox, call the function, or capture under a name not its own', async () => {
    const client = await new WorkspaceConnector(pool, { databaseUrl: url, budget: { maxRowBytes: 1 << 20, maxResponseBytes: 1 << 22 } }).connect(A);
    try {
      await client.query('BEGIN READ WRITE');
      await expect(client.query("INSERT INTO platform.row_changes (batch, workspace_id, table_name, op) VALUES (1, $1, 'x', 'insert')", [B])).rejects.toMatchObject({
        code: '42501',
      });
      await client.query('ROLLBACK');
      await expect(client.query('SELECT user_data.wds_capture_rows()')).rejects.toThrow(/trigger/);
      await client.query('BEGIN READ WRITE');
      // A table outside the workspace's names (or spelling B's), with the capture trigger: nothing is recorded.
      const bPrefixed = `ws_${B.replace(/-/g, '_')}_stolen`;
      for (const t of ['loose', bPrefixed]) {
        await client.query(`CREATE TABLE user_data."${t}" (id uuid DEFAULT gen_random_uuid(), v text)`);
        await client.query(
          `CREATE TRIGGER wds_capture_insert AFTER INSERT ON user_data."${t}" REFERENCING NEW TABLE AS wds_new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_data.wds_capture_rows()`,
        );
        await client.query(`INSERT INTO user_data."${t}" (v) VALUES ('x')`);
      }
      await client.query('COMMIT');
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM platform.row_changes WHERE table_name IN ('loose', 'stolen', $1)", [bPrefixed]);
      expect(rows[0].n).toBe(0);

      // Its own table, but the function called by a trigger of the session's making, without transition tables, and
      // a temporary relation named like one that reads what only the function's owner could: nothing runs or lands.
      const own = `ws_${A.replace(/-/g, '_')}_loot`;
      await client.query('BEGIN READ WRITE');
      await client.query(`CREATE TABLE user_data."${own}" (id uuid DEFAULT gen_random_uuid(), v text)`);
      await client.query("CREATE TEMP TABLE wds_new_rows AS SELECT 'from the session' AS v");
      await client.query(`CREATE TRIGGER wds_capture_insert AFTER INSERT ON user_data."${own}" FOR EACH STATEMENT EXECUTE FUNCTION user_data.wds_capture_rows()`);
      await client.query(`INSERT INTO user_data."${own}" (v) VALUES ('x')`);
      await client.query('COMMIT');
      const loot = await pool.query("SELECT count(*)::int AS n FROM platform.row_changes WHERE table_name = 'loot'");
      expect(loot.rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
  });

  it("a raw session's own cast to json never runs with the function's rights; the capture key is not the session's to read", async () => {
    const client = await new WorkspaceConnector(pool, { databaseUrl: url, budget: { maxRowBytes: 1 << 20, maxResponseBytes: 1 << 22 } }).connect(A);
    const physical = `user_data.ws_${A.replace(/-/g, '_')}_casted`;
    const forged = `'{"id":"00000000-0000-4000-8000-00000000000f","v":"forged"}'`;
    try {
      await table(A, 'casted', 'v text');
      // No language is the workspace role's (migration 0008): it cannot write a function at all. Should that wall
      // ever fall, the capture function must still not run the session's code with its rights.
      await expect(client.query('CREATE FUNCTION user_data.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$')).rejects.toMatchObject({ code: '42501' });
      const role = (await client.query<{ r: string }>('SELECT current_user AS r')).rows[0]?.r as string;
      await pool.query(`GRANT USAGE ON LANGUAGE plpgsql TO ${role}`);
      await client.query('BEGIN READ WRITE');
      // The type, the function and the cast are the session's own (the rewriter allows none of them): the function
      // would write B's outbox if it ran as the capture role.
      await client.query("CREATE TYPE user_data.wds_evil AS ENUM ('x')");
      await client.query(`CREATE FUNCTION user_data.wds_evil_json(user_data.wds_evil) RETURNS jsonb LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO platform.row_changes (batch, workspace_id, table_name, op, row) VALUES (1, '${B}', 'casted', 'insert', ${forged});
          RETURN '"x"'::jsonb;
        END $$`);
      await client.query('CREATE CAST (user_data.wds_evil AS jsonb) WITH FUNCTION user_data.wds_evil_json(user_data.wds_evil)');
      await pool.query(`REVOKE USAGE ON LANGUAGE plpgsql FROM ${role}`);
      await client.query(`ALTER TABLE ${physical} ADD COLUMN e user_data.wds_evil DEFAULT 'x'`);
      await client.query('COMMIT');
      await expect(client.query(`INSERT INTO ${physical} (v) VALUES ('a')`)).rejects.toMatchObject({ code: '42804' });
      // A domain and an array over the type are refused alike.
      await client.query(`ALTER TABLE ${physical} DROP COLUMN e`);
      await client.query('CREATE DOMAIN user_data.wds_evil_d AS user_data.wds_evil');
      await client.query(`ALTER TABLE ${physical} ADD COLUMN e user_data.wds_evil_d[] DEFAULT ARRAY['x']::user_data.wds_evil_d[]`);
      await expect(client.query(`INSERT INTO ${physical} (v) VALUES ('b')`)).rejects.toMatchObject({ code: '42804' });
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM platform.row_changes WHERE workspace_id = $1", [B]);
      expect(rows[0].n).toBe(0);
      await expect(client.query('SELECT key FROM platform.row_capture_key')).rejects.toMatchObject({ code: '42501' });
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      await client.query(`ALTER TABLE ${physical} DROP COLUMN IF EXISTS e`).catch(() => undefined);
      await client.end();
    }
    // The same workspace's other tables are captured as before.
    await sql.execute(admin(A), "INSERT INTO casted (v) VALUES ('fine')", limits);
    expect((await changes(A, 'casted')).map((c) => c.row?.v)).toEqual(['fine']);
  });

  it('the capture function runs as a role that can only write the outbox', async () => {
    const { rows } = await pool.query(
      "SELECT p.proowner::regrole::text AS owner, p.prosecdef, p.proconfig FROM pg_proc p WHERE p.oid = 'user_data.wds_capture_rows()'::regprocedure",
    );
    expect(rows[0]).toEqual({ owner: 'wds_row_capture', prosecdef: true, proconfig: ['search_path=pg_catalog, pg_temp'] });
    const { rows: rights } = await pool.query(
      "SELECT has_table_privilege('wds_row_capture', 'platform.workflow_events', 'INSERT') AS events, has_table_privilege('wds_row_capture', 'platform.users', 'SELECT') AS users, has_table_privilege('wds_row_capture', 'platform.row_changes', 'SELECT') AS reads",
    );
    expect(rights[0]).toEqual({ events: false, users: false, reads: false });
  });
});

describe("visibleRows: a subject's select policy over captured rows", () => {
  it('admits exactly the rows a read would show, with the same columns and values', async () => {
    await table(B, 'orders', 'owner uuid, amount numeric, note text, at timestamptz');
    const group = newId();
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, B, 'readers', [reader]]);
    await pool.query(
      `INSERT INTO platform.policies (id, workspace_id, name, policy_group_id, mode, table_name, operation, condition)
       VALUES ($1, $2, 'own', $3, 'allow', 'orders', 'select', '{"owner": {"$eq": "$user_id"}}'),
              ($4, $2, 'no-secret', $3, 'deny', 'orders', 'select', '{"note": {"$eq": "secret"}}')`,
      [newId(), B, group, newId()],
    );
    await sql.execute(
      admin(B),
      `INSERT INTO orders (owner, amount, note, at) VALUES ('${reader}', 12.50, 'mine', '2026-01-02T03:04:05Z'), ('${owner}', 99, 'theirs', now()), ('${reader}', 1, 'secret', now())`,
      limits,
    );
    const { rows: texts } = await pool.query<{ t: string }>("SELECT row::text AS t FROM platform.row_changes WHERE workspace_id = $1 AND table_name = 'orders' ORDER BY id", [B]);
    const images = texts.map((r) => r.t);
    const visible = await sql.visibleRows(as(B, reader), 'orders', images);
    expect(visible.map((v) => v.index)).toEqual([0]);
    const read = await sql.execute(as(B, reader), 'SELECT * FROM orders', limits);
    expect(read.rows).toEqual([visible[0]?.row]);
    expect(visible[0]?.row).toMatchObject({ amount: '12.50', at: '2026-01-02T03:04:05.000Z', note: 'mine' });
    // A row written already soft-deleted is one no read shows: nor does this.
    await sql.execute(admin(B), `INSERT INTO orders (owner, note, deleted_at) VALUES ('${reader}', 'born deleted', now())`, limits);
    const { rows: last } = await pool.query<{ t: string }>("SELECT row::text AS t FROM platform.row_changes WHERE workspace_id = $1 AND table_name = 'orders' ORDER BY id DESC LIMIT 1", [B]);
    expect(last[0]?.t).toContain('born deleted');
    expect(await sql.visibleRows(as(B, reader), 'orders', last.map((r) => r.t))).toEqual([]);
    // A member in no group (no select policy at all), a table that is gone: nothing.
    expect(await sql.visibleRows(as(B, newId()), 'orders', images)).toEqual([]);
    expect(await sql.visibleRows(as(B, reader), 'no_such_table', images)).toEqual([]);
  });
  it('for several users at once, each gets exactly what visibleRows answers them alone', async () => {
    await table(B, 'tasks', 'owner uuid, team text, note text');
    const [ana, ben, cy, nobody] = [newId(), newId(), newId(), newId()];
    const g1 = newId();
    const g2 = newId();
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4), ($5, $2, $6, $7)', [g1, B, 'own', [ana, ben], g2, 'red team', [cy]]);
    await pool.query(
      `INSERT INTO platform.policies (id, workspace_id, name, policy_group_id, mode, table_name, operation, condition)
       VALUES ($1, $2, 'own', $3, 'allow', 'tasks', 'select', '{"owner": {"$eq": "$user_id"}}'),
              ($4, $2, 'red', $5, 'allow', 'tasks', 'select', '{"team": "red"}'),
              ($6, $2, 'no-secret', $5, 'deny', 'tasks', 'select', '{"note": "secret"}')`,
      [newId(), B, g1, newId(), g2, newId()],
    );
    await sql.execute(
      admin(B),
      `INSERT INTO tasks (owner, team, note) VALUES ('${ana}', 'red', 'a'), ('${ben}', 'blue', 'b'), ('${ana}', 'red', 'secret'), (NULL, NULL, NULL), ('${cy}', 'red', NULL)`,
      limits,
    );
    await sql.execute(admin(B), `INSERT INTO tasks (owner, team, note, deleted_at) VALUES ('${ana}', 'red', 'gone', now())`, limits);
    const { rows } = await pool.query<{ t: string }>("SELECT row::text AS t FROM platform.row_changes WHERE workspace_id = $1 AND table_name = 'tasks' ORDER BY id", [B]);
    const images = rows.map((r) => r.t);
    const users = [ana, ben, cy, nobody, ana];
    const together = await sql.visibleRowsFor(B, users, 'tasks', images);
    expect([...together.keys()].sort()).toEqual([ana, ben, cy, nobody].sort());
    const alone = async (u: string) => sql.visibleRows(as(B, u), 'tasks', images);
    for (const u of [ana, ben, cy, nobody]) expect(together.get(u)).toEqual(await alone(u));
    expect(together.get(ana)?.map((v) => v.row.note)).toEqual(['a', 'secret']);
    expect(together.get(ben)?.map((v) => v.row.note)).toEqual(['b']);
    // Red team: red rows, but not the secret one — and a NULL note is unknown under the deny, so not admitted.
    expect(together.get(cy)?.map((v) => v.row.note)).toEqual(['a']);
    expect(together.get(nobody)).toEqual([]);
    expect(await sql.visibleRowsFor(B, [ana], 'no_such_table', images)).toEqual(new Map([[ana, []]]));
    // More readers than one statement checks (VISIBLE_ROWS_USERS): several statements, the same answers.
    const crowd = Array.from({ length: 450 }, () => newId());
    const g3 = newId();
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [g3, B, 'crowd', crowd]);
    await pool.query(`INSERT INTO platform.policies (id, workspace_id, name, policy_group_id, mode, table_name, operation, condition) VALUES ($1, $2, 'blue', $3, 'allow', 'tasks', 'select', '{"team": "blue"}')`, [newId(), B, g3]);
    const many = await sql.visibleRowsFor(B, [...crowd, ana], 'tasks', images);
    expect(new Set(crowd.map((u) => JSON.stringify(many.get(u)?.map((v) => v.row.note))))).toEqual(new Set(['["b"]']));
    expect(many.get(ana)).toEqual(await alone(ana));
    // The caller bounds the wait for a connection (realtime does): its signal's reason when it gives up.
    const gone = AbortSignal.abort(new Error('gave up waiting'));
    await expect(sql.visibleRows(as(B, ana), 'tasks', images, gone)).rejects.toThrow('gave up waiting');
    await expect(sql.visibleRowsFor(B, [ana, ben], 'tasks', images, gone)).rejects.toThrow('gave up waiting');
  });
  it("hostile text in a policy's values and in the table name stays data: quotes, comment openers, $$", async () => {
    await table(B, 'hostile', 'note text');
    const who = newId();
    const group = newId();
    const nasty = ["it's", 'a"b', '-- x', '/* y', '$$ z $$', "'); DROP TABLE x; --", '$tag$ w $tag$'];
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, B, 'nasty', [who, reader]]);
    await pool.query(
      "INSERT INTO platform.policies (id, workspace_id, name, policy_group_id, mode, table_name, operation, condition) VALUES ($1, $2, 'in', $3, 'allow', 'hostile', 'select', $4)",
      [newId(), B, group, JSON.stringify({ note: { $in: nasty.slice(0, 5) } })],
    );
    await pool.query(
      "INSERT INTO platform.policies (id, workspace_id, name, policy_group_id, mode, table_name, operation, condition) VALUES ($1, $2, 'not', $3, 'deny', 'hostile', 'select', $4)",
      [newId(), B, group, JSON.stringify({ note: "'); DROP TABLE x; --" })],
    );
    const values = [...nasty, 'plain'].map((n) => `'${n.replace(/'/g, "''")}'`).join('), (');
    await sql.execute(admin(B), `INSERT INTO hostile (note) VALUES (${values})`, limits);
    const { rows } = await pool.query<{ t: string }>("SELECT row::text AS t FROM platform.row_changes WHERE workspace_id = $1 AND table_name = 'hostile' ORDER BY id", [B]);
    const images = rows.map((r) => r.t);
    const alone = await sql.visibleRows(as(B, who), 'hostile', images);
    expect(alone.map((v) => v.row.note)).toEqual(nasty.slice(0, 5));
    const together = await sql.visibleRowsFor(B, [who, reader], 'hostile', images);
    expect(together.get(who)).toEqual(alone);
    expect(together.get(reader)).toEqual(alone);
    // What the same user reads through the SQL endpoint: the same rows.
    expect((await sql.execute(as(B, who), 'SELECT note FROM hostile ORDER BY id', limits)).rows?.map((r) => r.note).sort()).toEqual(nasty.slice(0, 5).sort());
    // A table name that is no logical name never becomes SQL text: refused before anything runs.
    for (const name of ['x"y', "q'; --", 'a$$b', 'c/*d', 'Hostile']) {
      await expect(sql.visibleRows(as(B, who), name, images)).rejects.toMatchObject({ code: 'INVALID_TABLE' });
      await expect(sql.visibleRowsFor(B, [who], name, images)).rejects.toMatchObject({ code: 'INVALID_TABLE' });
    }
    await expect(visibleRowsStatement(B, 'x"y', null, who, false)).rejects.toMatchObject({ code: 'INVALID_TABLE' });
    await expect(visibleRowsForStatement(B, "q'; --", [{ filter: null, userId: who }], false)).rejects.toMatchObject({ code: 'INVALID_TABLE' });
  });
});
