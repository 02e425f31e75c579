// Child process of sql-http.mjs: our API (as `pnpm start` runs it) and a bare Hono + pg route, on loopback.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';
import { startApiWithUser } from './bootstrap.mjs';

const { DATABASE_URL } = process.env;
const { running, call, user, token, auth, ws } = await startApiWithUser({ DATABASE_URL, DB_POOL_MAX: '10' });
await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: 'CREATE TABLE items (owner_id uuid, title text, total numeric)' }, auth);
const group = await call('POST', '/api/v1/policy-groups', { name: 'me', user_ids: [user.id] }, { ...auth, 'x-workspace-id': ws.id });
for (const operation of ['select', 'insert']) {
  await call('POST', '/api/v1/policies', { name: 'own', policy_group_id: group.id, mode: 'allow', table_name: 'items', operation, condition: { owner_id: '$user_id' } }, { ...auth, 'x-workspace-id': ws.id });
}
await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: `INSERT INTO items (owner_id, title, total) SELECT '${user.id}', 'item ' || g, g FROM generate_series(1, 1000) g` }, auth);
const { rows } = await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: 'SELECT id FROM items ORDER BY title LIMIT 1' }, auth);
const rowId = rows[0].id;
const physical = `user_data.ws_${ws.id.replace(/-/g, '_')}_items`;

// The bare route: the same query (row by id, owner filter, live rows), no auth, no rewriting.
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10 });
const bare = new Hono();
bare.get('/items/:id', async (c) => {
  const r = await pool.query(`SELECT * FROM ${physical} WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL`, [c.req.param('id'), user.id]);
  return c.json({ rows: r.rows });
});
const bareServer = await new Promise((ok) => {
  const s = serve({ fetch: bare.fetch, hostname: '127.0.0.1', port: 0 }, () => ok(s));
});
process.send({
  apiUrl: running.url,
  bareUrl: `http://127.0.0.1:${bareServer.address().port}`,
  token,
  workspaceId: ws.id,
  userId: user.id,
  rowId,
  physical,
});
process.on('message', async (m) => {
  if (m === 'stop') {
    bareServer.close();
    await pool.end();
    await running.close();
    process.exit(0);
  }
});
