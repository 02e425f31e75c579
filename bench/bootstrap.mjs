// Shared by the benchmark servers: our API started as `pnpm start` would (silent, on a free port, with the given
// settings), plus a user with a session token and a workspace of theirs.
import { loadConfig } from '@wds/api/config';
import { createLogger } from '@wds/api/logger';
import { startServer } from '@wds/api/server';

export const ADMIN_TOKEN = 'bench-admin-token-0123456789';
export const admin = { 'x-admin-token': ADMIN_TOKEN };

/** Our API as `pnpm start` runs it, silent, on a free port, with the given settings. */
export const startApi = (settings = {}) =>
  startServer(loadConfig({ PORT: '0', ADMIN_TOKEN, LOG_LEVEL: 'silent', ...settings }), createLogger('silent'));

/** JSON calls to a running API; a non-2xx answer throws. */
export const callerOf = (running) => async (method, path, body, headers = {}) => {
  const r = await fetch(running.url + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body && JSON.stringify(body) });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
};

export async function startApiWithUser(settings = {}) {
  const running = await startApi(settings);
  const call = callerOf(running);
  const user = await call('POST', '/admin/v1/users', { email: `bench${Date.now()}@example.com`, name: 'Bench' }, admin);
  const { token } = await call('POST', `/admin/v1/users/${user.id}/sessions`, {}, admin);
  const auth = { authorization: `Bearer ${token}` };
  const ws = await call('POST', '/api/v1/workspaces', { name: 'bench' }, auth);
  return { running, call, user, token, auth, ws };
}
