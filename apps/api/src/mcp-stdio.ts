#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';

/**
 * The MCP interface for desktop agents that only speak stdio: a bridge that serves MCP on stdin/stdout and forwards
 * every request to a running service's `/mcp` with the given credential. Nothing but protocol goes to stdout.
 *
 *   pnpm mcp --url http://127.0.0.1:3000 [--workspace <id>]      (the key from WDS_MCP_KEY, or --key svc_…)
 */
const USAGE = 'usage: wds-mcp --url <service URL> [--key <svc_… key; default $WDS_MCP_KEY>] [--workspace <workspace id>]';

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

const { values } = (() => {
  try {
    return parseArgs({ options: { url: { type: 'string' }, key: { type: 'string' }, workspace: { type: 'string' }, help: { type: 'boolean' } } });
  } catch (err) {
    return fail((err as Error).message);
  }
})();
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const key = values.key ?? process.env.WDS_MCP_KEY;
if (!values.url) fail('--url is required');
if (!key) fail('a credential is required: --key or WDS_MCP_KEY');
let endpoint: URL;
try {
  endpoint = new URL(values.url);
} catch {
  fail(`--url is not a URL: ${values.url}`);
}
if (!endpoint.pathname.endsWith('/mcp')) endpoint = new URL(`${endpoint.pathname.replace(/\/$/, '')}/mcp`, endpoint);

const headers: Record<string, string> = { authorization: `Bearer ${key}` };
if (values.workspace) headers['x-workspace-id'] = values.workspace;

let remote: Client | undefined;
async function connected(): Promise<Client> {
  if (remote) return remote;
  const client = new Client({ name: 'wds-mcp-stdio', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } }));
  remote = client;
  return client;
}

/** A session the service no longer knows (restarted, idle too long) answers 404 before anything ran: open another. */
async function forward<T>(call: (c: Client) => Promise<T>): Promise<T> {
  try {
    return await call(await connected());
  } catch (err) {
    if ((err as { code?: unknown }).code !== 404) throw err;
    await remote?.close().catch(() => undefined);
    remote = undefined;
    return call(await connected());
  }
}

const server = new Server(
  { name: 'workspace-data-service', version: '1.0.0' },
  { capabilities: { tools: {} }, instructions: 'Tools of a workspace data service, forwarded to its /mcp endpoint.' },
);
/**
 * The service bounds every call (mcp_timeout_ms, at most an hour), so the bridge waits as long as that instead of
 * the SDK's default minute, which would give up on a call the service is still running. A cancellation by the agent
 * is passed on, and so is the service's progress to an agent that asked for it.
 */
const CALL_LIMIT_MS = 3_600_000 + 60_000;
server.setRequestHandler(ListToolsRequestSchema, (req, extra) => forward((c) => c.listTools(req.params, { signal: extra.signal })));
server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
  // The agent's progress token: the service's notifications/progress are passed on under it.
  // Each one is written before the answer, which ends the agent's interest in them.
  const token = req.params._meta?.progressToken;
  const sent: Promise<void>[] = [];
  const onprogress =
    token === undefined
      ? undefined
      : (p: Progress) => {
          sent.push(extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } }).catch(() => undefined));
        };
  return forward(async (c) => {
    const result = await c.callTool(req.params, undefined, {
      signal: extra.signal,
      timeout: CALL_LIMIT_MS,
      maxTotalTimeout: CALL_LIMIT_MS,
      ...(onprogress ? { onprogress } : {}),
    });
    await Promise.all(sent);
    return result;
  });
});

try {
  await connected();
} catch (err) {
  fail(`cannot reach ${endpoint.href}: ${(err as Error).message}`);
}
await server.connect(new StdioServerTransport());
process.stdin.on('end', () => {
  void remote?.close().finally(() => process.exit(0));
});
