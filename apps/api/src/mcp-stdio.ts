#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type ProgressNotification, ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * The MCP interface for desktop agents that only speak stdio: a bridge that serves MCP on stdin/stdout and forwards
 * every request to a running service's `/mcp` with the given credential. Nothing but protocol goes to stdout.
 *
 *   pnpm mcp --url http://127.0.0.1:3000 [--workspace <id>]      (the key from WDS_MCP_KEY, or --key svc_…)
 */
const USAGE =
  'usage: wds-mcp --url <service URL> [--key <svc_… key; default $WDS_MCP_KEY>] [--workspace <workspace id>] [--features sql,files|all] [--tools a,b] [--read-only]';

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

const { values } = (() => {
  try {
    return parseArgs({ options: { url: { type: 'string' }, key: { type: 'string' }, workspace: { type: 'string' }, features: { type: 'string' }, tools: { type: 'string' }, 'read-only': { type: 'boolean' }, help: { type: 'boolean' } } });
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
// The session's tool set (docs/mcp.md#tool-sets), chosen at each initialize.
if (values.features) headers['x-mcp-features'] = values.features;
if (values.tools) headers['x-mcp-tools'] = values.tools;
if (values['read-only']) headers['x-mcp-read-only'] = 'true';

let remote: Client | undefined;
/**
 * The workspace the agent chose with set_workspace (without --workspace, the session holds it): a new session
 * (the service restarted, evicted the old one, or another process answers) gets it again before anything else.
 */
let chosenWorkspace: string | undefined;
async function connected(): Promise<Client> {
  if (remote) return remote;
  const client = new Client({ name: 'wds-mcp-stdio', version: '1.0.0' });
  // The service's progress, passed on by the bridge's own token (the SDK's per-call onprogress forgets a call's
  // token when its answer is read, and notifications are handled a moment later: the last ones were dropped).
  client.setNotificationHandler(ProgressNotificationSchema, (n) => progressOf.get(n.params.progressToken)?.(n.params));
  await client.connect(new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } }));
  if (chosenWorkspace !== undefined) {
    const again = await client.callTool({ name: 'set_workspace', arguments: { workspace_id: chosenWorkspace } });
    // No longer allowed (removed from the workspace, say): the agent's next workspace call says so itself.
    if (again.isError) chosenWorkspace = undefined;
  }
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
/** The calls waiting for the service's progress, by the token the bridge sent for them. */
const progressOf = new Map<string | number, (p: ProgressNotification['params']) => void>();
let nextToken = 0;
server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
  // The agent's progress token: the service's notifications/progress are passed on under it.
  // Each one is written before the answer, which ends the agent's interest in them.
  const token = req.params._meta?.progressToken;
  const sent: Promise<void>[] = [];
  const own = `bridge-${nextToken++}`;
  if (token !== undefined) {
    progressOf.set(own, ({ progressToken: _, ...p }) => {
      sent.push(extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } }).catch(() => undefined));
    });
  }
  const params = token === undefined ? req.params : { ...req.params, _meta: { ...req.params._meta, progressToken: own } };
  return forward(async (c) => {
    try {
      const result = await c.callTool(params, undefined, { signal: extra.signal, timeout: CALL_LIMIT_MS, maxTotalTimeout: CALL_LIMIT_MS });
      // The notifications that came with the answer are handled a moment after it: let them go out first.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await Promise.all(sent);
      // The workspace the agent chose is applied again after the bridge has to re-initialise.
      const chosen = req.params.arguments?.workspace_id;
      if (req.params.name === 'set_workspace' && !result.isError && typeof chosen === 'string') chosenWorkspace = chosen;
      return result;
    } finally {
      progressOf.delete(own);
    }
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
