// An MCP tool call against the same REST call, side by side in one run: a policy-filtered SELECT through
// `POST /api/v1/workspaces/:id/sql` and through the `execute_sql` tool at `/mcp` (one session, JSON-RPC over the
// same HTTP server). Prints latency and throughput at 1 and 8 concurrent clients and the added latency of MCP.
import { createDatabase, startTestPostgres } from '@wds/testkit';
import { admin, callerOf, startApi } from './bootstrap.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = [1, 8];

const pgServer = await startTestPostgres();
const running = await startApi({ DATABASE_URL: await createDatabase(pgServer.url, { prefix: 'bench' }) });
const call = callerOf(running);
const user = await call('POST', '/admin/v1/users', { email: `mcp-bench${Date.now()}@example.com`, name: 'Bench' }, admin);
const { token } = await call('POST', `/admin/v1/users/${user.id}/sessions`, {}, admin);
const auth = { authorization: `Bearer ${token}` };
const ws = await call('POST', '/api/v1/workspaces', { name: 'bench' }, auth);
const sqlPath = `/api/v1/workspaces/${ws.id}/sql`;
const run = (sql) => call('POST', sqlPath, { sql }, auth);
await run('CREATE TABLE items (title text, owner_id uuid)');
const group = await call('POST', '/api/v1/policy-groups', { name: 'readers', user_ids: [user.id] }, { ...auth, 'x-workspace-id': ws.id });
await call('POST', '/api/v1/policies', { name: 'own', policy_group_id: group.id, table_name: 'items', operation: 'select', mode: 'allow', condition: { owner_id: '$user_id' } }, { ...auth, 'x-workspace-id': ws.id });
await call('POST', '/api/v1/policies', { name: 'ins', policy_group_id: group.id, table_name: 'items', operation: 'insert', mode: 'allow' }, { ...auth, 'x-workspace-id': ws.id });
await run(`INSERT INTO items (title, owner_id) SELECT 'item ' || g, CASE WHEN g % 2 = 0 THEN '${user.id}'::uuid ELSE gen_random_uuid() END FROM generate_series(1, 1000) g`);
const SQL = "SELECT title FROM items WHERE title = 'item 500'";

const rest = async () => {
  const r = await fetch(running.url + sqlPath, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ sql: SQL }) });
  const body = await r.json();
  if (r.status !== 200 || body.rows.length !== 1) throw new Error(`REST: ${r.status} ${JSON.stringify(body)}`);
};

/** One MCP session (initialize + initialized), then tools/call requests on it. */
async function mcpSession() {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth, 'x-workspace-id': ws.id };
  const init = await fetch(`${running.url}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
  });
  const session = init.headers.get('mcp-session-id');
  await init.text();
  const h = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
  await (await fetch(`${running.url}/mcp`, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  let id = 1;
  return async () => {
    const r = await fetch(`${running.url}/mcp`, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'execute_sql', arguments: { sql: SQL } } }) });
    const body = await r.json();
    if (body.result?.isError || body.result?.structuredContent?.rows?.length !== 1) throw new Error(`MCP: ${JSON.stringify(body)}`);
  };
}

async function measure(clients, makeCall) {
  const calls = await Promise.all(Array.from({ length: clients }, makeCall));
  for (const c of calls) await c(); // warm
  const latencies = [];
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    calls.map(async (c) => {
      while (Date.now() < end) {
        const s = process.hrtime.bigint();
        await c();
        latencies.push(Number(process.hrtime.bigint() - s) / 1e6);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / SECONDS, p50: latencies[Math.floor(latencies.length / 2)], p99: latencies[Math.floor(latencies.length * 0.99)] };
}

const f = (n) => n.toFixed(2).padStart(7);
console.log(`Policy-filtered SELECT (1 of 1000 rows), REST vs MCP tools/call, ${SECONDS} s per run, PostgreSQL ${pgServer.kind}\n`);
console.log('clients  REST req/s  p50 ms  p99 ms   MCP req/s  p50 ms  p99 ms   MCP/REST req/s  added p50 ms');
for (const clients of CONCURRENCY) {
  const r = await measure(clients, async () => rest);
  const m = await measure(clients, mcpSession);
  console.log(
    `${String(clients).padStart(7)}  ${f(r.rps)}   ${f(r.p50)} ${f(r.p99)}   ${f(m.rps)}  ${f(m.p50)} ${f(m.p99)}   ${(m.rps / r.rps).toFixed(2).padStart(14)}  ${f(m.p50 - r.p50)}`,
  );
}
await running.close?.();
await pgServer.stop?.();
process.exit(0);
