// Child process of noisy-neighbour.mjs: our API (as `pnpm start` runs it) with two workspaces of two users, a
// victim and an abuser, each with a small table and the STFs the abuses need.
import { admin, callerOf, startApi } from './bootstrap.mjs';

const running = await startApi({
  DATABASE_URL: process.env.DATABASE_URL,
  STF_JS_WORKERS: '2',
  ...(process.env.SQL_WORKSPACE_CONNECTIONS_SHARED ? { SQL_WORKSPACE_CONNECTIONS_SHARED: process.env.SQL_WORKSPACE_CONNECTIONS_SHARED } : {}),
  // BENCH_BUDGETS=1: request-rate budgets on (off by default), set above what the victim sends.
  ...(process.env.BENCH_BUDGETS === '1' ? { RATE_LIMIT_PER_PRINCIPAL: '12000', RATE_LIMIT_PER_WORKSPACE: '24000' } : {}),
});
const call = callerOf(running);
const b64 = (s) => Buffer.from(s).toString('base64');

async function tenant(name, stfs) {
  const user = await call('POST', '/admin/v1/users', { email: `${name}${Date.now()}@example.com`, name }, admin);
  const { token } = await call('POST', `/admin/v1/users/${user.id}/sessions`, {}, admin);
  const auth = { authorization: `Bearer ${token}` };
  const ws = await call('POST', '/api/v1/workspaces', { name }, auth);
  await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: 'CREATE TABLE items (title text, total numeric)' }, auth);
  const group = await call('POST', '/api/v1/policy-groups', { name: 'all', user_ids: [user.id] }, { ...auth, 'x-workspace-id': ws.id });
  for (const operation of ['select', 'insert']) {
    await call('POST', '/api/v1/policies', { name: 'all', policy_group_id: group.id, mode: 'allow', table_name: 'items', operation, condition: {} }, { ...auth, 'x-workspace-id': ws.id });
  }
  await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: `INSERT INTO items (title, total) SELECT 'item ' || g, g FROM generate_series(1, 1000) g` }, auth);
  const ids = {};
  for (const [key, code] of Object.entries(stfs)) {
    const stf = await call('POST', '/api/v1/stfs', { name: key, version: '1', runtime: 'javascript', code: b64(code) }, { ...auth, 'x-workspace-id': ws.id });
    ids[key] = stf.id;
  }
  return { token, workspaceId: ws.id, stfs: ids };
}

const victim = await tenant('victim', { quick: 'return { n: $input.n + 1 };' });
const abuser = await tenant('abuser', {
  loop: 'while (true) {}',
  bomb: 'let s = "x"; const keep = []; while (true) { s = s + s; keep.push(s); }',
});
process.send({ apiUrl: running.url, victim, abuser });
process.on('message', async (m) => {
  if (m === 'stop') {
    await running.close();
    process.exit(0);
  }
});
