import { describe, expect, test } from './support.js';

describe('POST /workspaces/{id}/sql', () => {
  test('DDL adds system columns; DML with an allow policy; SELECT returns rows and executed_sql', async ({ h, owner, ws }) => {
    const created = await h.sql(owner.token, ws.id, 'CREATE TABLE orders (customer text NOT NULL, total numeric(10,2), qty int8, meta jsonb, due date, at timestamptz, raw bytea)');
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ affected_rows: 0 });
    expect(created.body.executed_sql).toContain('ws_');

    // Default deny, also for admins.
    const denied = await h.sql(owner.token, ws.id, 'SELECT * FROM orders');
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('POLICY_DENIED');
    expect(denied.body.details).toContain('orders');

    await h.allowAll(owner.token, ws.id, [owner.id], ['orders']);
    const ins = await h.sql(
      owner.token,
      ws.id,
      `INSERT INTO orders (customer, total, qty, meta, due, at, raw) VALUES ('ada', 12.50, 9007199254740993, '{"a":[1,2]}', '2026-01-02', '2026-01-02T03:04:05Z', '\\x0102'), ('bob', 1, 2, null, null, null, null)`,
    );
    expect(ins.status).toBe(200);
    expect(ins.body.affected_rows).toBe(2);

    const sel = await h.sql(owner.token, ws.id, 'SELECT * FROM orders ORDER BY customer');
    expect(sel.status).toBe(200);
    expect(sel.body.rows).toHaveLength(2);
    const ada = sel.body.rows[0];
    expect(ada).toMatchObject({ customer: 'ada', total: '12.50', qty: '9007199254740993', meta: { a: [1, 2] }, due: '2026-01-02', at: '2026-01-02T03:04:05.000Z', raw: 'AQI=', deleted_at: null });
    expect(sel.body.rows[1].qty).toBe(2);
    expect(ada.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(ada.created_at).toBeTruthy();
    expect(sel.body.executed_sql).toContain('SELECT');
  });

  test('updated_at is kept current; DELETE is a soft delete and reads skip deleted rows', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (name text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['t']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO t (name, updated_at) VALUES ('a', '2000-01-01'), ('b', '2000-01-01')");
    const upd = await h.sqlOk(owner.token, ws.id, "UPDATE t SET name = 'a2' WHERE name = 'a' RETURNING name, updated_at");
    expect(upd.affected_rows).toBe(1);
    expect(upd.rows[0].name).toBe('a2');
    expect(new Date(upd.rows[0].updated_at).getFullYear()).toBeGreaterThan(2000);

    const del = await h.sqlOk(owner.token, ws.id, "DELETE FROM t WHERE name = 'b'");
    expect(del.affected_rows).toBe(1);
    expect(del.executed_sql).toContain('deleted_at = now()');
    const left = await h.sqlOk(owner.token, ws.id, 'SELECT name FROM t');
    expect(left.rows).toEqual([{ name: 'a2' }]);
    const count = await h.sqlOk(owner.token, ws.id, 'SELECT count(*) AS n FROM t');
    expect(count.rows).toEqual([{ n: 1 }]);
    // Deleting again touches nothing: the row is already deleted.
    expect((await h.sqlOk(owner.token, ws.id, "DELETE FROM t WHERE name = 'b'")).affected_rows).toBe(0);
    // A table without deleted_at is deleted for real.
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE hard (id int PRIMARY KEY, deleted_at_x int)');
    const cols = await h.sqlOk(owner.token, ws.id, "SELECT column_name FROM information_schema.columns WHERE table_name = 'hard' ORDER BY ordinal_position");
    expect(cols.rows.map((r: any) => r.column_name)).toEqual(['id', 'deleted_at_x', 'created_at', 'updated_at', 'deleted_at']);
  });

  test('uuidv7() works on PostgreSQL 15 and ids sort by creation', async ({ h, owner, ws }) => {
    const r = await h.sqlOk(owner.token, ws.id, 'SELECT uuidv7() AS a, uuidv7() AS b');
    expect(r.rows[0].a).toMatch(/^[0-9a-f-]{8}-[0-9a-f]{4}-7/);
    expect(r.rows[0].a < r.rows[0].b || r.rows[0].a.slice(0, 13) === r.rows[0].b.slice(0, 13)).toBe(true);
  });

  test('information_schema lists only this workspace tables, under logical names', async ({ h, owner, ws }) => {
    const other = await h.workspace(owner.token, 'other');
    await h.sqlOk(owner.token, other.id, 'CREATE TABLE canary_other (x text)');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE mine (x text)');
    const r = await h.sqlOk(owner.token, ws.id, "SELECT table_name, table_schema FROM information_schema.tables ORDER BY table_name");
    expect(r.rows).toEqual([{ table_name: 'mine', table_schema: 'public' }]);
    const c = await h.sqlOk(owner.token, ws.id, 'SELECT DISTINCT table_name FROM information_schema.columns');
    expect(c.rows).toEqual([{ table_name: 'mine' }]);
  });

  test('the SQL error codes, each for its condition', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (x int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['t']);
    const cases: [string, number, string][] = [
      ['SELEC 1', 400, 'PARSE_ERROR'],
      ['', 400, 'VALIDATION_ERROR'],
      ['SELECT * FROM abcdefghijklmnopqrstuvwx', 400, 'INVALID_TABLE'],
      ['SELECT * FROM "Orders"', 400, 'INVALID_TABLE'],
      ['CREATE VIEW v AS SELECT 1', 400, 'UNSUPPORTED'],
      ['SELECT * FROM pg_catalog.pg_class', 400, 'SCHEMA_ACCESS_DENIED'],
      ['BEGIN', 400, 'TRANSACTION_NOT_ALLOWED'],
      ['COMMIT', 400, 'TRANSACTION_NOT_ALLOWED'],
      ['SELECT 1; SELECT 2', 400, 'MULTIPLE_STATEMENTS'],
      ["SELECT * FROM t WHERE x = 'not a number'", 400, 'EXECUTION_ERROR'],
      // No policy on a table: denied before its existence is even looked at.
      ['SELECT * FROM missing', 403, 'POLICY_DENIED'],
    ];
    for (const [sql, status, code] of cases) {
      const r = await h.sql(owner.token, ws.id, sql);
      expect([r.status, r.body.code], sql).toEqual([status, code]);
    }
    await h.allowAll(owner.token, ws.id, [owner.id], ['missing']);
    const missing = await h.sql(owner.token, ws.id, 'SELECT * FROM missing');
    expect(missing.body.code).toBe('EXECUTION_ERROR');
    expect(missing.body.error).toBe('relation "missing" does not exist');
    const stranger = await h.user('stranger');
    expect((await h.sql(stranger.token, ws.id, 'SELECT 1')).body.code).toBe('FORBIDDEN');
    expect((await h.sql(owner.token, '01900000-0000-7000-8000-000000000000', 'SELECT 1')).body.code).toBe('NOT_FOUND');
  });

  test('DDL needs admin or the DDL policy group', async ({ h, owner, ws }) => {
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const r = await h.sql(m.token, ws.id, 'CREATE TABLE t (x int)');
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('DDL_FORBIDDEN');
    const g = await h.group(owner.token, ws.id, { name: 'ddl', user_ids: [m.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { ddl_policy_group_id: g } });
    expect((await h.sql(m.token, ws.id, 'CREATE TABLE t (x int)')).status).toBe(200);
    expect((await h.sql(m.token, ws.id, 'ALTER TABLE t ADD COLUMN y text')).status).toBe(200);
    expect((await h.sql(m.token, ws.id, 'CREATE INDEX t_y ON t (y)')).status).toBe(200);
    expect((await h.sql(m.token, ws.id, 'DROP INDEX t_y')).status).toBe(200);
    expect((await h.sql(m.token, ws.id, 'DROP TABLE t')).status).toBe(200);
  });

  test('statement timeout and row cap give clear errors', async ({ h, owner, ws }) => {
    const slow = await h.sql(owner.token, ws.id, 'SELECT count(*) FROM generate_series(1, 100000000000) g');
    expect(slow.status).toBe(400);
    expect(slow.body.code).toBe('EXECUTION_ERROR');
    expect(slow.body.error).toContain('statement timeout');
    const many = await h.sql(owner.token, ws.id, `SELECT g FROM generate_series(1, ${h.services.config.SQL_MAX_ROWS + 1}) g`);
    expect(many.status).toBe(400);
    expect(many.body.error).toContain('row cap');
    const exact = await h.sql(owner.token, ws.id, `SELECT g FROM generate_series(1, ${h.services.config.SQL_MAX_ROWS}) g`);
    expect(exact.body.rows).toHaveLength(h.services.config.SQL_MAX_ROWS);
  });

  test('audit entries name the statement kind and the logical tables', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (x int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['t']);
    await h.sqlOk(owner.token, ws.id, 'INSERT INTO t (x) VALUES (1)');
    await h.sqlOk(owner.token, ws.id, 'SELECT * FROM t');
    const r = await h.call('GET', '/api/v1/audit-logs?action=execute_sql_*', { token: owner.token, workspace: ws.id });
    expect(r.body.map((e: any) => e.action)).toEqual(['execute_sql_select', 'execute_sql_insert', 'execute_sql_ddl']);
    expect(r.body[0].details.tables).toEqual(['t']);
    expect(r.body[1].details).toEqual({ tables: ['t'], affected_rows: 1 });
  });

  test('the audit entry commits or rolls back with the statement', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (x int)');
    const g = await h.group(owner.token, ws.id, { user_ids: [owner.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 't', operation: 'insert', condition: { x: { $lt: 10 } } });
    const denied = await h.sql(owner.token, ws.id, 'INSERT INTO t (x) VALUES (1), (100)');
    expect(denied.body.code).toBe('POLICY_DENIED');
    const ok = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, {
      token: owner.token,
      body: { sql: 'INSERT INTO t (x) VALUES (2)' },
      headers: { 'x-request-id': "req-1'); DELETE FROM platform.audit_logs; --" },
    });
    expect(ok.status).toBe(200);
    const r = await h.call('GET', '/api/v1/audit-logs?action=execute_sql_insert', { token: owner.token, workspace: ws.id });
    expect(r.body).toHaveLength(1);
    expect(r.body[0].details.affected_rows).toBe(1);
    expect((await h.call('GET', '/api/v1/audit-logs?action=execute_sql_ddl', { token: owner.token, workspace: ws.id })).body).toHaveLength(1);
  });
});

describe('POST /workspaces/{id}/sql/preview', () => {
  test('returns the rewritten SQL without evaluating policies', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (x int)');
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const r = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, { token: m.token, body: { sql: 'UPDATE t SET x = 1' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      original_sql: 'UPDATE t SET x = 1',
      operation: 'update',
      affected_tables: ['t'],
      requires_approval: true,
    });
    expect(r.body.proposal_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body.transformed_sql).toContain('user_data.ws_');
    const sel = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, { token: m.token, body: { sql: 'SELECT * FROM t' } });
    expect(sel.body.requires_approval).toBe(false);
    // DDL by a member previews fine: authorization is decided on execute only.
    const ddl = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, { token: m.token, body: { sql: 'DROP TABLE t' } });
    expect(ddl.status).toBe(200);
    expect(ddl.body.operation).toBe('ddl');
  });

  test('with_policies shows the SQL as the caller would run it, or why it is denied', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (owner_id uuid, x int)');
    const g = await h.group(owner.token, ws.id, { user_ids: [owner.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 't', operation: 'select', condition: { owner_id: '$user_id' } });
    const r = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, {
      token: owner.token,
      body: { sql: 'SELECT * FROM t', with_policies: true },
    });
    expect(r.body.policy_sql).toContain(`owner_id = '${owner.id}'`);
    const d = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, {
      token: owner.token,
      body: { sql: 'DELETE FROM t', with_policies: true },
    });
    expect(d.body.policy_sql).toBeNull();
    expect(d.body.policy_denied).toContain('delete');
  });
});
