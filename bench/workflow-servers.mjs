// Child process of workflow-run.mjs: our API (as `pnpm start` runs it, OUTBOUND_ALLOWLIST=127.0.0.1), a local
// effect target, and a bare Hono route (the HTTP baseline), all on loopback. Sets up a 3-step workflow:
// STF → STF → effect.
import http from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { startApiWithUser } from './bootstrap.mjs';

const { DATABASE_URL, STF_A, STF_B } = process.env;
const { running, call, token, auth, ws } = await startApiWithUser({ DATABASE_URL, OUTBOUND_ALLOWLIST: '127.0.0.1', STF_JS_WORKERS: '2' });
const hook = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
});
await new Promise((ok) => hook.listen(0, '127.0.0.1', ok));
const hookUrl = `http://127.0.0.1:${hook.address().port}/hook`;

const h = { ...auth, 'x-workspace-id': ws.id };
const b64 = (s) => Buffer.from(s).toString('base64');
const a = await call('POST', '/api/v1/stfs', { name: 'a', version: '1', runtime: 'javascript', code: b64(STF_A) }, h);
const b = await call('POST', '/api/v1/stfs', { name: 'b', version: '1', runtime: 'javascript', code: b64(STF_B) }, h);
const e = await call(
  'POST',
  '/api/v1/effects',
  { name: 'hook', version: '1', url: hookUrl, method: 'POST', header_mappings: [], body_mappings: [{ source: { type: 'Variable', value: '$.total' }, target: 'total' }] },
  h,
);
const wf = await call(
  'POST',
  '/api/v1/workflows',
  {
    name: 'bench',
    stf_steps: [
      { stf_version_id: a.version.id, input_mappings: [] },
      { stf_version_id: b.version.id, input_mappings: [] },
    ],
    effect_steps: [{ effect_version_id: e.version.id, input_mappings: [] }],
  },
  h,
);

const bare = new Hono();
bare.post('/echo', async (c) => c.json(await c.req.json()));
const bareServer = await new Promise((ok) => {
  const s = serve({ fetch: bare.fetch, hostname: '127.0.0.1', port: 0 }, () => ok(s));
});
process.send({ apiUrl: running.url, bareUrl: `http://127.0.0.1:${bareServer.address().port}`, hookUrl, token, workspaceId: ws.id, workflowId: wf.id });
process.on('message', async (m) => {
  if (m === 'stop') {
    bareServer.close();
    hook.close();
    await running.close();
    process.exit(0);
  }
});
