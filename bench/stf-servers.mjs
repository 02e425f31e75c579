// Child process of stf-run.mjs: our API (as `pnpm start` runs it) with one javascript STF, and a bare Hono route
// that runs the same function directly in Node, both on loopback.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { startApiWithUser } from './bootstrap.mjs';

const { DATABASE_URL, STF_BODY } = process.env;
const { running, call, token, auth, ws } = await startApiWithUser({ DATABASE_URL, STF_JS_WORKERS: '2' });
const stf = await call(
  'POST',
  '/api/v1/stfs',
  { name: 'bench', version: '1', runtime: 'javascript', code: Buffer.from(STF_BODY).toString('base64') },
  { ...auth, 'x-workspace-id': ws.id },
);

// The bare route: the same function body, compiled once by Node, behind the same JSON in and out.
const AsyncFunction = (async () => {}).constructor;
const fn = new AsyncFunction('$input', STF_BODY);
const bare = new Hono();
bare.post('/run', async (c) => {
  const body = await c.req.json();
  const started = performance.now();
  const output = await fn(body.input);
  return c.json({ success: true, output, logs: [], duration_ms: performance.now() - started });
});
const bareServer = await new Promise((ok) => {
  const s = serve({ fetch: bare.fetch, hostname: '127.0.0.1', port: 0 }, () => ok(s));
});
process.send({ apiUrl: running.url, bareUrl: `http://127.0.0.1:${bareServer.address().port}`, token, workspaceId: ws.id, stfId: stf.id });
process.on('message', async (m) => {
  if (m === 'stop') {
    bareServer.close();
    await running.close();
    process.exit(0);
  }
});
