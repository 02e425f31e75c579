// Child process of soak.mjs (run with --expose-gc): our API (as `pnpm start` runs it) with one user and workspace,
// a table with a policy, an STF, a workflow STF → effect to a local sink, all on loopback. Answers 'sample' with
// its memory after a full collection, so the parent sees what stays, not garbage not yet collected.
import http from 'node:http';
import v8 from 'node:v8';
import { startApiWithUser } from './bootstrap.mjs';

const { running, call, user, token, auth, ws } = await startApiWithUser({
  DATABASE_URL: process.env.DATABASE_URL,
  OUTBOUND_ALLOWLIST: '127.0.0.1',
  STF_JS_WORKERS: '2',
  DB_POOL_MAX: '10',
});
const sink = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});
await new Promise((ok) => sink.listen(0, '127.0.0.1', ok));
const h = { ...auth, 'x-workspace-id': ws.id };
const b64 = (s) => Buffer.from(s).toString('base64');
await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: 'CREATE TABLE items (owner_id uuid, title text, total numeric)' }, auth);
const group = await call('POST', '/api/v1/policy-groups', { name: 'me', user_ids: [user.id] }, h);
for (const operation of ['select', 'insert', 'delete']) {
  await call('POST', '/api/v1/policies', { name: 'own', policy_group_id: group.id, mode: 'allow', table_name: 'items', operation, condition: { owner_id: '$user_id' } }, h);
}
const stf = await call('POST', '/api/v1/stfs', { name: 's', version: '1', runtime: 'javascript', code: b64('return { total: ($input.n ?? 0) + 1, at: Date.now() };') }, h);
const e = await call(
  'POST',
  '/api/v1/effects',
  { name: 'sink', version: '1', url: `http://127.0.0.1:${sink.address().port}/in`, method: 'POST', header_mappings: [], body_mappings: [{ source: { type: 'Variable', value: '$.total' }, target: 'total' }] },
  h,
);
const wf = await call(
  'POST',
  '/api/v1/workflows',
  { name: 'soak', stf_steps: [{ stf_version_id: stf.version.id, input_mappings: [] }], effect_steps: [{ effect_version_id: e.version.id, input_mappings: [] }] },
  h,
);
process.send({ apiUrl: running.url, token, userId: user.id, workspaceId: ws.id, stfId: stf.id, workflowId: wf.id });
process.on('message', async (m) => {
  if (m === 'sample') {
    globalThis.gc?.();
    const u = process.memoryUsage();
    process.send({ sample: { rss: u.rss, heapUsed: u.heapUsed, external: u.external, arrayBuffers: u.arrayBuffers } });
  } else if (m?.snapshot) {
    globalThis.gc?.();
    process.send({ snapshotted: v8.writeHeapSnapshot(m.snapshot) });
  } else if (m === 'stop') {
    sink.close();
    await running.close();
    process.exit(0);
  }
});
