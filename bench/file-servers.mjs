// Child process of files-run.mjs: our API (as `pnpm start` runs it) with a filesystem blob store under STORAGE_DIR.
// Answers 'rss' with its peak resident memory so far.
import { loadConfig } from '@wds/api/config';
import { createLogger } from '@wds/api/logger';
import { startServer } from '@wds/api/server';

const { DATABASE_URL, STORAGE_DIR } = process.env;
const running = await startServer(
  loadConfig({ DATABASE_URL, STORAGE_DIR, PORT: '0', ADMIN_TOKEN: 'bench-admin-token-0123456789', LOG_LEVEL: 'silent' }),
  createLogger('silent'),
);
const call = async (method, path, body, headers = {}) => {
  const r = await fetch(running.url + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body && JSON.stringify(body) });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
};
const admin = { 'x-admin-token': 'bench-admin-token-0123456789' };
const user = await call('POST', '/admin/v1/users', { email: `bench${Date.now()}@example.com`, name: 'Bench' }, admin);
const { token } = await call('POST', `/admin/v1/users/${user.id}/sessions`, {}, admin);
const ws = await call('POST', '/api/v1/workspaces', { name: 'bench' }, { authorization: `Bearer ${token}` });
process.send({ apiUrl: running.url, token, workspaceId: ws.id });
process.on('message', async (m) => {
  if (m === 'rss') process.send({ maxRssBytes: process.resourceUsage().maxRSS * 1024, rss: process.memoryUsage().rss });
  if (m === 'stop') {
    await running.close();
    process.exit(0);
  }
});
