// Child process of noisy-neighbour.mjs: our API (as `pnpm start` runs it) with two users, a victim with one
// workspace and an abuser with BENCH_WORKSPACES of them, each with a small table and the STFs the abuses need.
import { admin, callerOf, startApi } from './bootstrap.mjs';

const running = await startApi({
  DATABASE_URL: process.env.DATABASE_URL,
  STF_JS_WORKERS: '2',
  // The abuser's workspaces must all be creatable, whatever the default quota.
  MAX_WORKSPACES_PER_USER: String(Math.max(100, Number(process.env.BENCH_WORKSPACES ?? 10))),
  ...(process.env.SQL_WORKSPACE_CONNECTIONS_SHARED ? { SQL_WORKSPACE_CONNECTIONS_SHARED: process.env.SQL_WORKSPACE_CONNECTIONS_SHARED } : {}),
  // BENCH_BUDGETS=1: request-rate budgets on (off by default), set above what the victim sends.
  ...(process.env.BENCH_BUDGETS === '1' ? { RATE_LIMIT_PER_PRINCIPAL: '12000', RATE_LIMIT_PER_WORKSPACE: '24000' } : {}),
});
const call = callerOf(running);
const b64 = (s) => Buffer.from(s).toString('base64');

async function user(name) {
  const u = await call('POST', '/admin/v1/users', { email: `${name}${Date.now()}@example.com`, name }, admin);
  const { token } = await call('POST', `/admin/v1/users/${u.id}/sessions`, {}, admin);
  return { id: u.id, token };
}

async function tenant({ id: userId, token }, name, stfs) {
  const auth = { authorization: `Bearer ${token}` };
  const ws = await call('POST', '/api/v1/workspaces', { name }, auth);
  await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: 'CREATE TABLE items (title text, total numeric)' }, auth);
  const group = await call('POST', '/api/v1/policy-groups', { name: 'all', user_ids: [userId] }, { ...auth, 'x-workspace-id': ws.id });
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

const victim = await tenant(await user('victim'), 'victim', { quick: 'return { n: $input.n + 1 };' });
// One user's many workspaces (BENCH_WORKSPACES, default 10; 1 is the single abusing workspace of before).
const abuserUser = await user('abuser');
const abusers = [];
for (let i = 0; i < Math.max(1, Number(process.env.BENCH_WORKSPACES ?? 10)); i++) {
  abusers.push(
    await tenant(abuserUser, `abuser ${i}`, {
      loop: 'while (true) {}',
      bomb: 'let s = "x"; const keep = []; while (true) { s = s + s; keep.push(s); }',
    }),
  );
}
process.send({ apiUrl: running.url, victim, abusers });
process.on('message', async (m) => {
  if (m === 'stop') {
    await running.close();
    process.exit(0);
  }
});
