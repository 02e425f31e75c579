import '@wds/testkit';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WorkspaceSql, ensureWorkspaceRole, userValueTypes } from '../src/index.js';

let pool: pg.Pool;
let destroy: () => Promise<void>;
const A = newId();
const B = newId();
const owner = newId();

beforeAll(async () => {
  const url = await createDatabase(inject('pgServerUrl'), { prefix: 'wsql' });
  const { db, pool: p } = createDb(url, { max: 4 });
  await migrateToLatest(db);
  await db.insertInto('platform.users').values({ id: owner, email: `${owner}@x.io`, name: 'o' }).execute();
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
  pool = p;
  destroy = () => db.destroy();
});
afterAll(() => destroy());

const admin = (workspaceId: string) => ({ workspaceId, ddlGroupId: null, isAdmin: true, subject: { kind: 'user' as const, userId: owner } });
const limits = { statementTimeoutMs: 2000, maxRows: 100 };

describe('the workspace role: the second wall', () => {
  it('cannot read another workspace table even when handed its physical name directly', async () => {
    const sql = new WorkspaceSql(pool);
    await sql.execute(admin(B), 'CREATE TABLE secrets (v text)', limits);
    const client = await pool.connect();
    try {
      await client.query(`INSERT INTO user_data.ws_${B.replace(/-/g, '_')}_secrets (v) VALUES ('B_SECRET')`);
      const roleA = await ensureWorkspaceRole(client, A);
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE "${roleA}"`);
      await expect(client.query(`SELECT * FROM user_data.ws_${B.replace(/-/g, '_')}_secrets`)).rejects.toThrow(/permission denied/);
      await client.query('ROLLBACK');
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE "${roleA}"`);
      await expect(client.query('SELECT * FROM platform.users')).rejects.toThrow(/permission denied/);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  it('DDL creates tables owned by the workspace role', async () => {
    const sql = new WorkspaceSql(pool);
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
    const sql = new WorkspaceSql(pool);
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
