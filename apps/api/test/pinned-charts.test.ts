import { describe, expect, test } from './support.js';

const chart = (over: Record<string, unknown> = {}) => ({
  title: 'Revenue by month',
  sql_query: 'SELECT month, sum(total) AS total FROM sales GROUP BY month',
  chart_type: 'bar',
  ...over,
});

describe('pinned charts', () => {
  test('create, get, list, update, soft delete; audit', async ({ h, owner, ws }) => {
    const c = await h.call('POST', '/api/v1/pinned-charts', {
      token: owner.token,
      workspace: ws.id,
      body: chart({ x_axis_column: 'month', y_axis_columns: ['total'], display_order: 2, description: 'Monthly' }),
    });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({
      workspace_id: ws.id,
      title: 'Revenue by month',
      chart_type: 'bar',
      x_axis_column: 'month',
      y_axis_columns: ['total'],
      display_order: 2,
      description: 'Monthly',
      is_visible: true,
      created_by: owner.id,
    });
    expect(Object.keys(c.body).sort()).toEqual([
      'chart_type',
      'created_at',
      'created_by',
      'description',
      'display_order',
      'id',
      'is_visible',
      'sql_query',
      'title',
      'updated_at',
      'workspace_id',
      'x_axis_column',
      'y_axis_columns',
    ]);
    const minimal = await h.call('POST', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id, body: chart({ title: 'Count' }) });
    expect(minimal.body).toMatchObject({ x_axis_column: null, y_axis_columns: null, display_order: 0, description: null, is_visible: true });
    const hidden = await h.call('POST', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id, body: chart({ title: 'Hidden', is_visible: false }) });
    expect(hidden.status).toBe(201);

    // Visible only, by display_order then creation.
    const list = await h.call('GET', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id });
    expect(list.status).toBe(200);
    expect(list.body.map((x: any) => x.title)).toEqual(['Count', 'Revenue by month']);
    const withHidden = await h.call('GET', '/api/v1/pinned-charts?include_hidden=true', { token: owner.token, workspace: ws.id });
    expect(withHidden.body.map((x: any) => x.title)).toEqual(['Count', 'Hidden', 'Revenue by month']);
    expect((await h.call('GET', '/api/v1/pinned-charts?include_hidden=maybe', { token: owner.token, workspace: ws.id })).status).toBe(400);
    expect((await h.call('GET', '/api/v1/pinned-charts?limit=1&offset=1', { token: owner.token, workspace: ws.id })).body.map((x: any) => x.title)).toEqual([
      'Revenue by month',
    ]);
    // A hidden chart is still readable by id.
    expect((await h.call('GET', `/api/v1/pinned-charts/${hidden.body.id}`, { token: owner.token, workspace: ws.id })).status).toBe(200);

    const got = await h.call('GET', `/api/v1/pinned-charts/${c.body.id}`, { token: owner.token, workspace: ws.id });
    expect(got.body).toEqual(c.body);

    const p = await h.call('PATCH', `/api/v1/pinned-charts/${c.body.id}`, {
      token: owner.token,
      workspace: ws.id,
      body: { title: 'Revenue', display_order: -1, y_axis_columns: ['total', 'avg'], description: null },
    });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ title: 'Revenue', display_order: -1, y_axis_columns: ['total', 'avg'], description: null, x_axis_column: 'month' });
    expect((await h.call('GET', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id })).body.map((x: any) => x.title)).toEqual(['Revenue', 'Count']);
    const unhide = await h.call('PATCH', `/api/v1/pinned-charts/${hidden.body.id}`, { token: owner.token, workspace: ws.id, body: { is_visible: true } });
    expect(unhide.body.is_visible).toBe(true);
    expect((await h.call('PATCH', `/api/v1/pinned-charts/${c.body.id}`, { token: owner.token, workspace: ws.id, body: { unknown: 1 } })).status).toBe(400);

    expect((await h.call('DELETE', `/api/v1/pinned-charts/${c.body.id}`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    expect((await h.call('GET', `/api/v1/pinned-charts/${c.body.id}`, { token: owner.token, workspace: ws.id })).status).toBe(404);
    expect((await h.call('PATCH', `/api/v1/pinned-charts/${c.body.id}`, { token: owner.token, workspace: ws.id, body: { title: 'x' } })).status).toBe(404);
    expect((await h.call('DELETE', `/api/v1/pinned-charts/${c.body.id}`, { token: owner.token, workspace: ws.id })).status).toBe(404);
    const after = await h.call('GET', '/api/v1/pinned-charts?include_hidden=true', { token: owner.token, workspace: ws.id });
    expect(after.body.map((x: any) => x.id)).not.toContain(c.body.id);
    // Soft: the row is kept.
    const row = await h.services.db.selectFrom('platform.pinned_charts').select('deleted_at').where('id', '=', c.body.id).executeTakeFirstOrThrow();
    expect(row.deleted_at).not.toBeNull();

    const log = await h.call('GET', '/api/v1/audit-logs?action=*', { token: owner.token, workspace: ws.id });
    const mine = log.body.filter((e: any) => e.resource_type === 'pinned_chart').reverse();
    expect(mine.map((e: any) => e.action)).toEqual([
      'create_pinned_chart',
      'create_pinned_chart',
      'create_pinned_chart',
      'update_pinned_chart',
      'update_pinned_chart',
      'delete_pinned_chart',
    ]);
    expect(mine[0]).toMatchObject({ resource_id: c.body.id, details: { title: 'Revenue by month', chart_type: 'bar' } });
    expect([...mine[3].details.changed].sort()).toEqual(['description', 'display_order', 'title', 'y_axis_columns']);
    expect(mine[5].resource_id).toBe(c.body.id);
  });

  test('validation: required fields, limits, sql_query must be one SELECT', async ({ h, owner, ws }) => {
    const post = (body: unknown) => h.call('POST', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id, body });
    for (const [body, field] of [
      [{ sql_query: 'SELECT 1', chart_type: 'bar' }, 'title'],
      [chart({ title: '' }), 'title'],
      [chart({ title: 't'.repeat(256) }), 'title'],
      [chart({ sql_query: '' }), 'sql_query'],
      [chart({ sql_query: 'S'.repeat(20_001) }), 'sql_query'],
      [chart({ chart_type: '' }), 'chart_type'],
      [chart({ y_axis_columns: 'total' }), 'y_axis_columns'],
      [chart({ y_axis_columns: [1] }), 'y_axis_columns'],
      [chart({ display_order: 1.5 }), 'display_order'],
      [chart({ display_order: '1' }), 'display_order'],
      [chart({ is_visible: 'yes' }), 'is_visible'],
      [chart({ sql_query: 'DELETE FROM sales' }), 'sql_query'],
      [chart({ sql_query: "INSERT INTO sales VALUES (1)" }), 'sql_query'],
      [chart({ sql_query: 'CREATE TABLE t (id int)' }), 'sql_query'],
      [chart({ sql_query: 'SELECT 1; SELECT 2' }), 'sql_query'],
      [chart({ sql_query: 'SELEC 1' }), 'sql_query'],
      [chart({ sql_query: 'WITH d AS (DELETE FROM sales RETURNING *) SELECT * FROM d' }), 'sql_query'],
      [chart({ sql_query: 'SELECT * FROM platform.users' }), 'sql_query'],
    ] as const) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body).slice(0, 100)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.details, JSON.stringify(body).slice(0, 100)).toContain(`${field}`);
    }
    // Exactly at the limit is fine.
    const long = `SELECT 1 AS ${'a'.repeat(20_000 - 'SELECT 1 AS '.length)}`;
    expect(long).toHaveLength(20_000);
    expect((await post(chart({ sql_query: long }))).status).toBe(201);
    // A table that does not exist yet may be pinned.
    expect((await post(chart({ sql_query: 'SELECT * FROM not_created_yet' }))).status).toBe(201);
    const c = await post(chart());
    const bad = await h.call('PATCH', `/api/v1/pinned-charts/${c.body.id}`, { token: owner.token, workspace: ws.id, body: { sql_query: 'DROP TABLE sales' } });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toMatch(/^sql_query: /);
  });

  test('members read and pin; only the creator or an admin changes or deletes', async ({ h, owner, ws }) => {
    const alice = await h.user('alice');
    const bob = await h.user('bob');
    await h.addMember(owner.token, ws.id, alice.email, 'member');
    await h.addMember(owner.token, ws.id, bob.email, 'member');
    const mine = await h.call('POST', '/api/v1/pinned-charts', { token: alice.token, workspace: ws.id, body: chart({ title: 'Alice' }) });
    expect(mine.status).toBe(201);
    expect(mine.body.created_by).toBe(alice.id);
    const adminChart = await h.call('POST', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id, body: chart({ title: 'Owner' }) });

    expect((await h.call('GET', '/api/v1/pinned-charts', { token: bob.token, workspace: ws.id })).body).toHaveLength(2);
    expect((await h.call('GET', `/api/v1/pinned-charts/${mine.body.id}`, { token: bob.token, workspace: ws.id })).status).toBe(200);
    const bobPatch = await h.call('PATCH', `/api/v1/pinned-charts/${mine.body.id}`, { token: bob.token, workspace: ws.id, body: { title: 'Bob' } });
    expect(bobPatch.status).toBe(403);
    expect(bobPatch.body.code).toBe('FORBIDDEN');
    expect((await h.call('DELETE', `/api/v1/pinned-charts/${mine.body.id}`, { token: bob.token, workspace: ws.id })).status).toBe(403);
    expect((await h.call('PATCH', `/api/v1/pinned-charts/${adminChart.body.id}`, { token: alice.token, workspace: ws.id, body: { title: 'x' } })).status).toBe(403);

    expect((await h.call('PATCH', `/api/v1/pinned-charts/${mine.body.id}`, { token: alice.token, workspace: ws.id, body: { title: 'Alice 2' } })).status).toBe(200);
    expect((await h.call('PATCH', `/api/v1/pinned-charts/${mine.body.id}`, { token: owner.token, workspace: ws.id, body: { display_order: 9 } })).status).toBe(200);
    expect((await h.call('DELETE', `/api/v1/pinned-charts/${mine.body.id}`, { token: owner.token, workspace: ws.id })).status).toBe(204);

    const stranger = await h.user('stranger');
    expect((await h.call('GET', '/api/v1/pinned-charts', { token: stranger.token, workspace: ws.id })).status).toBe(403);
    expect((await h.call('GET', '/api/v1/pinned-charts', { token: owner.token })).status).toBe(400);
  });

  test("another workspace's chart is 404 and never listed", async ({ h, owner, ws }) => {
    const other = await h.workspace(owner.token, 'other');
    const theirs = await h.call('POST', '/api/v1/pinned-charts', { token: owner.token, workspace: other.id, body: chart({ title: 'theirs' }) });
    for (const [m, body] of [['GET', undefined], ['PATCH', { title: 'x' }], ['DELETE', undefined]] as const) {
      expect((await h.call(m, `/api/v1/pinned-charts/${theirs.body.id}`, { token: owner.token, workspace: ws.id, body })).status, m).toBe(404);
    }
    expect((await h.call('GET', '/api/v1/pinned-charts?include_hidden=true', { token: owner.token, workspace: ws.id })).body).toEqual([]);
    expect((await h.call('GET', `/api/v1/pinned-charts/${theirs.body.id}`, { token: owner.token, workspace: other.id })).body.title).toBe('theirs');
  });
});
