// What MCP costs a model's context: the tool list's size per tool set (docs/mcp.md#tool-sets) — the default profile,
// read-only, each feature group and every tool — and the results of the biggest read tools, against one baseline
// measured in the same run: every tool (features=all). Tokens are characters / 4 (no tokenizer is installed);
// "as a model sees it" counts name, description and input schema only, as hosts put them in the prompt.
import { createDatabase, startTestPostgres } from '@wds/testkit';
import { startApiWithUser } from './bootstrap.mjs';

const FEATURES = ['sql', 'files', 'documents', 'workflows', 'stfs', 'embeddings', 'setup', 'admin', 'drive', 'saas', 'approvals'];
const pgServer = await startTestPostgres();
const { running, token, ws } = await startApiWithUser({ DATABASE_URL: await createDatabase(pgServer.url, { prefix: 'bench' }) });

/** One MCP session with these extra headers; `rpc(method, params)` answers the JSON-RPC result. */
async function session(extra) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, 'x-workspace-id': ws.id, ...extra };
  const post = (body, h) => fetch(`${running.url}/mcp`, { method: 'POST', headers: h, body: JSON.stringify(body) });
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }, headers);
  if (!init.ok) throw new Error(`initialize ${JSON.stringify(extra)}: ${init.status} ${await init.text()}`);
  const h = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id'), 'mcp-protocol-version': '2025-06-18' };
  await init.text();
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, h)).text();
  let id = 1;
  return async (method, params) => {
    const body = await (await post({ jsonrpc: '2.0', id: id++, method, params }, h)).json();
    if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
    return body.result;
  };
}

const tokens = (value) => Math.ceil(JSON.stringify(value).length / 4);
const asModelSees = (tools) => tokens(tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })));

const sets = [['default', {}], ['read_only', { 'x-mcp-read-only': 'true' }], ...FEATURES.map((f) => [`features=${f}`, { 'x-mcp-features': f }]), ['all', { 'x-mcp-features': 'all' }]];
const rows = [];
for (const [name, headers] of sets) {
  const rpc = await session(headers);
  const { tools } = await rpc('tools/list', {});
  rows.push({ name, count: tools.length, list: tokens({ tools }), model: asModelSees(tools) });
}
const all = rows.at(-1);
console.log('Tool list per tool set (tokens = characters / 4)');
console.log('| set | tools | tools/list JSON | as a model sees it | share of all |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.name} | ${r.count} | ${r.list} | ${r.model} | ${(r.model / all.model).toFixed(2)} |`);

// The biggest results of read tools: the STF libraries' type declarations, one call each.
const rpc = await session({ 'x-mcp-features': 'all' });
const listed = await rpc('tools/call', { name: 'list_stf_libraries', arguments: {} });
const libraries = listed.structuredContent ?? JSON.parse(listed.content?.[0]?.text ?? '[]');
const names = (Array.isArray(libraries) ? libraries : (libraries?.items ?? libraries?.libraries ?? libraries?.result ?? [])).map((l) => l.name).filter(Boolean);
const sizes = [];
for (const name of names) {
  const r = await rpc('tools/call', { name: 'get_stf_library_types', arguments: { name } });
  const text = (r.content ?? []).map((c) => c.text ?? '').join('');
  sizes.push({ name, bytes: Buffer.byteLength(text), tokens: Math.ceil(text.length / 4) });
}
sizes.sort((a, b) => b.tokens - a.tokens);
console.log(`\nget_stf_library_types results, biggest first (the text of content; a host's cap is often 25,000 tokens)`);
console.log('| library | bytes | tokens | over 25k tokens |');
console.log('|---|---|---|---|');
for (const s of sizes.slice(0, 8)) console.log(`| ${s.name} | ${s.bytes} | ${s.tokens} | ${s.tokens > 25_000 ? 'yes' : 'no'} |`);

await running.close();
await pgServer.stop?.();
process.exit(0);
