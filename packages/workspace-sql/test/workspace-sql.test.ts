import '@wds/testkit';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WorkspaceConnector, WorkspaceSql, ensureWorkspaceRole, rolePassword, roleSecret, userValueTypes } from '../src/index.js';

let pool: pg.Pool;
let url: string;
const open: WorkspaceSql[] = [];
/** A WorkspaceSql on the test database, closed after the file. */
const workspaceSql = () => {
  const s = new WorkspaceSql(pool, { databaseUrl: url });
  open.push(s);
  return s;
};
let destroy: () => Promise<void>;
const A = newId();
const B = newId();
const owner = newId();

beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'wsql' });
  const { db, pool: p } = createDb(url, { max: 4 });
  await migrateToLatest(db);
  await db.insertInto('platform.users').values({ id: owner, email: `${owner}@x.io`, name: 'o' }).execute();
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
  pool = p;
  destroy = () => db.destroy();
});
afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
  await destroy();
});

const admin = (workspaceId: string) => ({ workspaceId, ddlGroupId: null, isAdmin: true, subject: { kind: 'user' as const, userId: owner } });
const limits = { statementTimeoutMs: 2000, maxRows: 100 };

describe('the workspace role: the second wall', () => {
  /** A raw session of workspace A's role, as if text had escaped the rewriter. */
  const escaped = async () => new WorkspaceConnector(pool, { databaseUrl: url, budget: { maxRowBytes: 1 << 20, maxResponseBytes: 1 << 22 } }).connect(A);
  const bTable = () => `user_data.ws_${B.replace(/-/g, '_')}_secrets`;

  it('a session of the workspace role is logged in as that role and cannot reach any other', async () => {
    await workspaceSql().execute(admin(B), 'CREATE TABLE secrets (v text)', limits);
    await pool.query(`INSERT INTO ${bTable()} (v) VALUES ('B_SECRET')`);
    const client = await escaped();
    try {
      const { rows } = await client.query('SELECT current_user AS c, session_user AS s, current_setting($1) AS p', ['search_path']);
      expect(rows[0]).toEqual({ c: `wds_ws_${A.replace(/-/g, '')}`, s: `wds_ws_${A.replace(/-/g, '')}`, p: 'pg_catalog' });
      const attempts = [
        'SET ROLE postgres',
        `SET ROLE "wds_ws_${B.replace(/-/g, '')}"`,
        "SELECT set_config('role', 'postgres', false)",
        "SELECT set_config('role', 'postgres', true)",
        'SET SESSION AUTHORIZATION postgres',
        "SELECT set_config('session_authorization', 'postgres', false)",
        `SELECT * FROM ${bTable()}`,
        `INSERT INTO ${bTable()} (v) VALUES ('x')`,
        `DROP TABLE ${bTable()}`,
        'SELECT * FROM platform.users',
        'SELECT * FROM platform.workspaces',
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT pg_ls_dir('.')",
        "COPY (SELECT 1) TO PROGRAM 'true'",
        "COPY (SELECT 1) TO '/tmp/wds-escaped'",
        "SELECT lo_import('/etc/hostname')",
        'CREATE ROLE wds_escaped_role',
        `ALTER ROLE "wds_ws_${A.replace(/-/g, '')}" SUPERUSER`,
        `ALTER ROLE "wds_ws_${A.replace(/-/g, '')}" CREATEROLE`,
        `GRANT "wds_ws_${B.replace(/-/g, '')}" TO "wds_ws_${A.replace(/-/g, '')}"`,
        'CREATE DATABASE wds_escaped',
        'CREATE SCHEMA wds_escaped',
      ];
      for (const sql of attempts) {
        await expect(client.query(sql), sql).rejects.toMatchObject({ code: expect.stringMatching(/^(42501|0LP01|22023|42P01)$/) });
      }
      // RESET ROLE is allowed and changes nothing: the session's own role is the only one it has.
      await client.query('RESET ROLE');
      expect((await client.query('SELECT current_user AS c')).rows[0].c).toBe(`wds_ws_${A.replace(/-/g, '')}`);
      const roles = await client.query('SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user');
      expect(roles.rows[0]).toEqual({ rolsuper: false, rolcreaterole: false, rolcreatedb: false });
      const member = await client.query('SELECT count(*)::int AS n FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = current_user');
      expect(member.rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
    expect((await pool.query(`SELECT v FROM ${bTable()}`)).rows).toEqual([{ v: 'B_SECRET' }]);
  });

  it('refuses a workspace role that has rights beyond its workspace', async () => {
    const ws = newId();
    const role = `wds_ws_${ws.replace(/-/g, '')}`;
    await pool.query(`CREATE ROLE "${role}" NOLOGIN`);
    await pool.query(`GRANT pg_read_server_files TO "${role}"`);
    const client = await pool.connect();
    try {
      await expect(ensureWorkspaceRole(client, ws, 'pw')).rejects.toThrow(/rights beyond its workspace/);
    } finally {
      client.release();
    }
  });

  it('DDL creates tables owned by the workspace role', async () => {
    const sql = workspaceSql();
    await sql.execute(admin(A), 'CREATE TABLE notes (v text)', limits);
    const { rows } = await pool.query(
      `SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname = $1`,
      [`ws_${A.replace(/-/g, '_')}_notes`],
    );
    expect(rows[0].owner).toBe(`wds_ws_${A.replace(/-/g, '')}`);
  });

  it('a user statement is sent alone: the extended protocol refuses a second one', async () => {
    const client = await pool.connect();
    try {
      await expect(client.query({ text: 'SELECT 1; SELECT 2', queryMode: 'extended' } as pg.QueryConfig)).rejects.toThrow(/multiple commands/);
    } finally {
      client.release();
    }
  });
});

describe('values', () => {
  it('turns PostgreSQL values into lossless JSON', async () => {
    const { rows } = await pool.query({
      text: `SELECT 42::int8 AS small, 9007199254740993::int8 AS big, 1.50::numeric AS num, '2026-01-02 03:04:05+00'::timestamptz AS tz,
             '2026-01-02 03:04:05'::timestamp AS ts, '2026-01-02'::date AS d, '\\x0102'::bytea AS b, '{"a":1}'::jsonb AS j`,
      types: userValueTypes,
    });
    expect(rows[0]).toEqual({
      small: 42,
      big: '9007199254740993',
      num: '1.50',
      tz: '2026-01-02T03:04:05.000Z',
      ts: '2026-01-02T03:04:05',
      d: '2026-01-02',
      b: 'AQI=',
      j: { a: 1 },
    });
  });
});

describe('sessions (the sql() calls of one STF run)', () => {
  const setup = async () => {
    const ws = newId();
    await pool.query('INSERT INTO platform.workspaces (id, name) VALUES ($1, $2)', [ws, 's']);
    const sql = workspaceSql();
    await sql.execute(admin(ws), 'CREATE TABLE items (owner_id uuid, title text)', limits);
    const group = newId();
    const stf = newId();
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, stf_ids) VALUES ($1, $2, $3, $4)', [group, ws, 'stf', [stf]]);
    for (const op of ['select', 'insert']) {
      await pool.query(
        `INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation, condition)
         VALUES ($1, $2, $3, 'p', 'allow', 'items', $4, $5)`,
        [newId(), ws, group, op, JSON.stringify({ owner_id: '$user_id' })],
      );
    }
    const caller = { workspaceId: ws, ddlGroupId: null, isAdmin: false, subject: { kind: 'stf' as const, stfId: stf, userId: owner } };
    return { sql, caller };
  };

  it('runs several statements in one transaction under the STF subject; commit keeps them', async () => {
    const { sql, caller } = await setup();
    const s = await sql.openSession(caller, limits);
    expect(await s.query(`INSERT INTO items (owner_id, title) VALUES ('${owner}', 'a'), ('${owner}', 'b')`)).toBe(2);
    expect((await s.query('SELECT title FROM items ORDER BY title')) as unknown[]).toEqual([{ title: 'a' }, { title: 'b' }]);
    // Not committed yet: invisible to everyone else.
    const outside = await sql.openSession(caller, limits);
    expect(await outside.query('SELECT title FROM items')).toEqual([]);
    await outside.end(true);
    await s.end(true);
    const after = await sql.openSession(caller, limits);
    expect(((await after.query('SELECT title FROM items')) as unknown[]).length).toBe(2);
    await after.end(false);
  });

  it('a failing statement throws and rolls back alone; rollback drops everything; DDL and policy limits hold', async () => {
    const { sql, caller } = await setup();
    const s = await sql.openSession(caller, limits);
    await s.query(`INSERT INTO items (owner_id, title) VALUES ('${owner}', 'kept')`);
    await expect(s.query("SELECT 1 / 0")).rejects.toMatchObject({ code: 'EXECUTION_ERROR' });
    await expect(s.query(`INSERT INTO items (owner_id, title) VALUES ('${newId()}', 'not mine')`)).rejects.toMatchObject({ code: 'POLICY_DENIED' });
    await expect(s.query('DELETE FROM items')).rejects.toMatchObject({ code: 'POLICY_DENIED' });
    await expect(s.query('CREATE TABLE x (a int)')).rejects.toMatchObject({ code: 'DDL_FORBIDDEN' });
    expect(await s.query('SELECT title FROM items')).toEqual([{ title: 'kept' }]);
    await s.end(false);
    await expect(s.query('SELECT 1')).rejects.toMatchObject({ code: 'EXECUTION_ERROR' });
    const again = await sql.openSession(caller, limits);
    expect(await again.query('SELECT title FROM items')).toEqual([]);
    await again.end(true);
  });
});

describe('fair sharing', () => {
  it('an STF session holds one of its workspace\u2019s slots; that workspace waits or gets 429, another does not', async () => {
    const sql = new WorkspaceSql(pool, { databaseUrl: url, pools: { maxPerWorkspace: 1, maxQueuePerWorkspace: 0 } });
    open.push(sql);
    const s = await sql.openSession(admin(A), limits);
    await expect(sql.execute(admin(A), 'SELECT 1 AS one', limits)).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS', status: 429 });
    await expect(sql.openSession(admin(A), limits)).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    expect((await sql.execute(admin(B), 'SELECT 1 AS one', limits)).rows).toEqual([{ one: 1 }]);
    await s.end(true);
    expect((await sql.execute(admin(A), 'SELECT 1 AS one', limits)).rows).toEqual([{ one: 1 }]);
  });

  it('a lost connection costs its statement a 503, and the next statement gets a fresh connection', async () => {
    const sql = workspaceSql();
    const s = await sql.openSession(admin(A), limits);
    expect(await s.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND application_name = 'wds-sql'`, [
      `wds_ws_${A.replace(/-/g, '')}`,
    ]);
    await expect(s.query('SELECT 1 AS one')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    await s.end(false).catch(() => undefined);
    expect((await sql.execute(admin(A), 'SELECT 2 AS two', limits)).rows).toEqual([{ two: 2 }]);
  });
});

describe('workspace role passwords', () => {
  it('derive from the configured secret or the service password, never from nothing', () => {
    const a = roleSecret('postgres://svc:pw1@127.0.0.1:5432/db');
    expect(roleSecret('postgres://svc:pw2@127.0.0.1:5432/db')).not.toBe(a);
    expect(roleSecret('postgres://svc@127.0.0.1:5432/db', 'a-configured-secret-value')).not.toBe(a);
    expect(() => roleSecret('postgres://svc@127.0.0.1:5432/db')).toThrow(/SQL_ROLE_SECRET/);
    expect(rolePassword(a, 'wds_ws_1')).not.toBe(rolePassword(a, 'wds_ws_2'));
  });
});

describe('the second wall: nothing one workspace puts in the shared schema reaches another', () => {
  const policyFor = async (ws: string, table: string) => {
    const group = newId();
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, ws, 'g', [owner]]);
    for (const op of ['select', 'insert']) {
      await pool.query(
        `INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation) VALUES ($1, $2, $3, 'p', 'allow', $4, $5)`,
        [newId(), ws, group, table, op],
      );
    }
  };
  const fresh = async () => {
    const ws = newId();
    await pool.query('INSERT INTO platform.workspaces (id, name) VALUES ($1, $2)', [ws, 'w']);
    return ws;
  };

  it('a workspace role cannot create functions (no trusted language), so nothing can shadow a built-in', async () => {
    const client = await new WorkspaceConnector(pool, { databaseUrl: url, budget: { maxRowBytes: 1 << 20, maxResponseBytes: 1 << 22 } }).connect(A);
    try {
      for (const lang of ['sql', 'plpgsql']) {
        await expect(
          client.query(`CREATE FUNCTION user_data.lower(varchar) RETURNS text LANGUAGE ${lang} AS $$ SELECT 'x' $$`),
        ).rejects.toMatchObject({ code: '42501' });
      }
    } finally {
      await client.end();
    }
  });

  it('even a function planted in user_data is never resolved: sessions search pg_catalog only', async () => {
    const ws = await fresh();
    const sql = workspaceSql();
    await sql.execute(admin(ws), 'CREATE TABLE names (v varchar(20))', limits);
    await policyFor(ws, 'names');
    await sql.execute(admin(ws), "INSERT INTO names (v) VALUES ('ADA')", limits);
    // As a managed database might allow (the service is no superuser there): an exact-match overload of lower().
    await pool.query(`CREATE FUNCTION user_data.lower(varchar) RETURNS text LANGUAGE sql AS $$ SELECT 'TROJAN'::text $$`);
    try {
      expect((await sql.execute(admin(ws), 'SELECT lower(v) AS l FROM names', limits)).rows).toEqual([{ l: 'ada' }]);
    } finally {
      await pool.query('DROP FUNCTION user_data.lower(varchar)');
    }
  });

  it('uuidv7() is the service\u2019s own, qualified by the rewriter', async () => {
    const ws = await fresh();
    const sql = workspaceSql();
    const r = await sql.execute(admin(ws), 'CREATE TABLE ids (x uuid DEFAULT uuidv7(), n int)', limits);
    expect(r.executed_sql).toContain('DEFAULT user_data.uuidv7()');
    await policyFor(ws, 'ids');
    expect((await sql.execute(admin(ws), 'SELECT uuidv7() IS NOT NULL AS ok', limits)).rows).toEqual([{ ok: true }]);
  });

  it('a table squatting a workspace\u2019s physical name is never used by that workspace', async () => {
    const ws = await fresh();
    const squatter = `wds_squatter_${newId().slice(-12)}`;
    await pool.query(`CREATE ROLE ${squatter} NOLOGIN`);
    await pool.query(`CREATE TABLE user_data.ws_${ws.replace(/-/g, '_')}_orders (card text)`);
    await pool.query(`ALTER TABLE user_data.ws_${ws.replace(/-/g, '_')}_orders OWNER TO ${squatter}`);
    await policyFor(ws, 'orders');
    await expect(workspaceSql().execute(admin(ws), "INSERT INTO orders (card) VALUES ('4111')", limits)).rejects.toMatchObject({
      code: 'EXECUTION_ERROR',
      message: expect.stringContaining('not owned by this workspace'),
    });
  });

  it('the row check is VOLATILE: PostgreSQL never folds a constant-false check of zero rows into a denial', async () => {
    const { rows } = await pool.query(`SELECT provolatile FROM pg_proc WHERE proname = 'wds_row_check'`);
    expect(rows).toEqual([{ provolatile: 'v' }]);
  });
});

describe('writes', () => {
  it('a policy-checked write of many rows answers its count without keeping a row per written row', async () => {
    const ws = newId();
    await pool.query('INSERT INTO platform.workspaces (id, name) VALUES ($1, $2)', [ws, 'w']);
    const sql = workspaceSql();
    await sql.execute(admin(ws), 'CREATE TABLE big (n int)', limits);
    await pool.query(`INSERT INTO user_data.ws_${ws.replace(/-/g, '_')}_big (n) SELECT g FROM generate_series(1, 20000) g`);
    const group = newId();
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, ws, 'g', [owner]]);
    for (const op of ['select', 'update']) {
      await pool.query(
        `INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation, condition)
         VALUES ($1, $2, $3, 'p', 'allow', 'big', $4, $5)`,
        [newId(), ws, group, op, JSON.stringify({ n: { $gte: 0 } })],
      );
    }
    const r = await sql.execute(admin(ws), 'UPDATE big SET n = n + 1', limits);
    // The row check is in the executed RETURNING, evaluated for every row; none of its rows comes back.
    expect(r.executed_sql).toContain('wds_row_check');
    expect(r).toMatchObject({ kind: 'update', affected_rows: 20000 });
    expect(r.rows).toBeUndefined();
    await expect(sql.execute(admin(ws), 'UPDATE big SET n = -1 WHERE n = 2', limits)).rejects.toMatchObject({ code: 'POLICY_DENIED' });
  });
});

describe('STF sessions under concurrent sql() calls', () => {
  it('statements run one at a time in call order, and end waits for them', async () => {
    const ws = newId();
    await pool.query('INSERT INTO platform.workspaces (id, name) VALUES ($1, $2)', [ws, 'w']);
    const sql = workspaceSql();
    await sql.execute(admin(ws), 'CREATE TABLE log (n int)', limits);
    const group = newId();
    await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, ws, 'g', [owner]]);
    for (const op of ['select', 'insert']) {
      await pool.query(
        `INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation) VALUES ($1, $2, $3, 'p', 'allow', 'log', $4)`,
        [newId(), ws, group, op],
      );
    }
    const s = await sql.openSession(admin(ws), limits);
    // Fired together: the failing one in the middle must roll back only itself.
    const results = await Promise.allSettled([
      s.query('INSERT INTO log (n) VALUES (1)'),
      s.query('SELECT 1 / 0'),
      s.query('INSERT INTO log (n) VALUES (3)'),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const ending = s.end(true);
    await expect(s.query('SELECT 1')).rejects.toMatchObject({ code: 'EXECUTION_ERROR' });
    await ending;
    const { rows } = await pool.query(`SELECT n FROM user_data.ws_${ws.replace(/-/g, '_')}_log ORDER BY n`);
    expect(rows).toEqual([{ n: 1 }, { n: 3 }]);
  });
});

describe('reads in one round trip: the connection settings they run under', () => {
  it('hold whatever the database URL says: the time limit cuts a read, and a read cannot write', async () => {
    // A URL that would lift the time limit and allow writes outside a transaction, were its options used.
    const lax = new URL(url);
    lax.searchParams.set('options', '-c statement_timeout=0 -c default_transaction_read_only=off');
    const s = new WorkspaceSql(pool, { databaseUrl: lax.toString(), statementTimeoutMs: 300 });
    open.push(s);
    const fast = { statementTimeoutMs: 300, maxRows: 100 };
    const slow = await s.execute(admin(A), 'SELECT count(*) FROM generate_series(1, 100000000000) g', fast).catch((e: unknown) => e);
    expect((slow as { code?: string }).code).toBe('EXECUTION_ERROR');
    expect(String((slow as Error).message)).toMatch(/statement timeout|longer than/i);
    // The connection itself is read-only outside a transaction; writes open theirs with BEGIN READ WRITE.
    await s.execute(admin(A), 'CREATE TABLE notes_rw (v text)', fast);
    const lease = new WorkspaceConnector(pool, {
      databaseUrl: lax.toString(),
      budget: { maxRowBytes: 1 << 20, maxResponseBytes: 1 << 22 },
      sessionOptions: '-c default_transaction_read_only=on',
    });
    const client = await lease.connect(A);
    try {
      await expect(client.query(`INSERT INTO user_data.ws_${A.replace(/-/g, '_')}_notes_rw (v) VALUES ('x')`)).rejects.toThrow(/read-only transaction/);
    } finally {
      await client.end();
    }
    await s.writeAsWorkspace(A, [{ text: `INSERT INTO user_data.ws_${A.replace(/-/g, '_')}_notes_rw (v) VALUES ('y')` }]);
    expect((await pool.query(`SELECT v FROM user_data.ws_${A.replace(/-/g, '_')}_notes_rw`)).rows).toEqual([{ v: 'y' }]);
  });
});
