import { type IncomingMessage, type Server, type ServerResponse, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './support.js';

/**
 * Sessions that survive: two API processes (two sets of services on one database, each with its own HTTP server)
 * behind a load balancer of the test's own on 127.0.0.1 that does not stick sessions to a process. A client that
 * names its workspace with X-Workspace-ID is served by whichever process answers (sessionless); the stdio bridge,
 * which holds the workspace of `set_workspace`, re-applies it when a process that never saw its session makes it
 * re-initialize.
 */

type ToolResult = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: any };

/** Forwards each request to one of the backends: round robin, or all to the one `stick` names. */
class Balancer {
  url = '';
  private server: Server | undefined;
  private next = 0;
  /** Requests each backend answered. */
  readonly served: number[];
  /** Undefined: round robin; a number: every request to that backend. */
  stick: number | undefined;

  constructor(private readonly backends: string[]) {
    this.served = backends.map(() => 0);
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.forward(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const i = this.stick ?? this.next++ % this.backends.length;
    this.served[i] = (this.served[i] ?? 0) + 1;
    const target = new URL(req.url ?? '/', this.backends[i]);
    const out = request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  }
}

let a: Harness;
let b: Harness;
let lb: Balancer;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string; name: string };

beforeAll(async () => {
  a = await Harness.create();
  // The second process: its own services and HTTP server, on the first one's database.
  b = await Harness.create({}, a.url);
  lb = new Balancer([await a.listen(), await b.listen()]);
  await lb.start();
  owner = await a.user('sessions');
  ws = await a.workspace(owner.token, 'Sessions');
  await a.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (id serial PRIMARY KEY, body text)');
  await a.allowAll(owner.token, ws.id, [owner.id], ['notes']);
});
afterAll(async () => {
  await lb?.stop();
  await b?.close();
  await a?.close();
});

const text = (r: ToolResult) => r.content.map((c) => c.text ?? '').join('');

describe('sessionless with X-Workspace-ID', () => {
  it('every call of an agent works whichever process answers it (round robin, no stickiness)', async () => {
    lb.stick = undefined;
    const before = [...lb.served];
    const client = new Client({ name: 'lb-agent', version: '1.0.0' });
    const headers = { authorization: `Bearer ${owner.token}`, 'x-workspace-id': ws.id };
    await client.connect(new StreamableHTTPClientTransport(new URL(`${lb.url}/mcp`), { requestInit: { headers } }));
    for (let i = 0; i < 6; i++) {
      const listed = await client.listTools();
      expect(listed.tools.some((t) => t.name === 'execute_sql')).toBe(true);
      const wrote = (await client.callTool({ name: 'execute_sql', arguments: { sql: `INSERT INTO notes (body) VALUES ('call ${i}')` } })) as ToolResult;
      expect(wrote.isError, text(wrote)).toBeFalsy();
      const where = (await client.callTool({ name: 'get_current_workspace', arguments: {} })) as ToolResult;
      expect(where.structuredContent).toMatchObject({ workspace: { id: ws.id, role: 'admin' }, source: 'X-Workspace-ID' });
    }
    const read = (await client.callTool({ name: 'execute_sql', arguments: { sql: "SELECT count(*)::int AS n FROM notes WHERE body LIKE 'call %'" } })) as ToolResult;
    expect(text(read)).toContain('"n":6');
    // Both processes answered calls of the one session.
    expect((lb.served[0] ?? 0) - (before[0] ?? 0)).toBeGreaterThan(5);
    expect((lb.served[1] ?? 0) - (before[1] ?? 0)).toBeGreaterThan(5);
    await client.close();
  });

  it('without X-Workspace-ID a process that never saw the session says so (404), and another identity\'s session stays unknown', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const post = (base: string, token: string, body: unknown, extra: Record<string, string> = {}) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...extra },
        body: JSON.stringify(body),
      });
    const opened = await post(await a.listen(), owner.token, initialize);
    const sessionId = opened.headers.get('mcp-session-id') as string;
    expect(sessionId).toBeTruthy();
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    // The other process, no workspace header: the session's state (set_workspace) would be missing, so 404.
    expect((await post(await b.listen(), owner.token, list, { 'mcp-session-id': sessionId })).status).toBe(404);
    // With it: served there without a session.
    const served = await post(await b.listen(), owner.token, list, { 'mcp-session-id': sessionId, 'x-workspace-id': ws.id });
    expect(served.status).toBe(200);
    expect(served.headers.get('mcp-session-id')).toBeNull();
    // Another identity presenting the id on the process that holds it: unknown, with or without the header.
    const stranger = await a.user('stranger');
    const strangerWs = await a.workspace(stranger.token, 'Theirs');
    for (const extra of [{}, { 'x-workspace-id': strangerWs.id }, { 'x-workspace-id': ws.id }] as Record<string, string>[]) {
      const res = await post(await a.listen(), stranger.token, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_current_workspace', arguments: {} } }, { 'mcp-session-id': sessionId, ...extra });
      expect(res.status, JSON.stringify(extra)).toBe(404);
    }
    // And sessionless on the other process, the stranger is themselves only: the owner's workspace is refused.
    const probe = await post(await b.listen(), stranger.token, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'execute_sql', arguments: { sql: 'SELECT * FROM notes' } } }, { 'mcp-session-id': sessionId, 'x-workspace-id': ws.id });
    const body = (await probe.json()) as { result?: ToolResult };
    expect(body.result?.isError).toBe(true);
    expect(body.result?.structuredContent?.code).toBe('FORBIDDEN');
    expect(JSON.stringify(body)).not.toContain('call 0');
  });
});

describe('the stdio bridge', () => {
  it('re-applies the workspace chosen with set_workspace after it has to re-initialize on the other process', async () => {
    lb.stick = 0;
    const client = new Client({ name: 'stdio-agent', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['dist/mcp-stdio.js', '--url', lb.url],
        env: { PATH: process.env.PATH ?? '', WDS_MCP_KEY: owner.token },
        stderr: 'pipe',
      }),
    );
    try {
      const chose = (await client.callTool({ name: 'set_workspace', arguments: { workspace_id: ws.id } })) as ToolResult;
      expect(chose.isError, text(chose)).toBeFalsy();
      const first = (await client.callTool({ name: 'execute_sql', arguments: { sql: "INSERT INTO notes (body) VALUES ('bridge on a')" } })) as ToolResult;
      expect(first.isError, text(first)).toBeFalsy();
      // The first process "goes away" for this agent: everything now reaches the second, which never saw the session.
      const onB = lb.served[1] ?? 0;
      lb.stick = 1;
      const second = (await client.callTool({ name: 'execute_sql', arguments: { sql: "INSERT INTO notes (body) VALUES ('bridge on b')" } })) as ToolResult;
      expect(second.isError, text(second)).toBeFalsy();
      const where = (await client.callTool({ name: 'get_current_workspace', arguments: {} })) as ToolResult;
      expect(where.structuredContent).toMatchObject({ workspace: { id: ws.id }, source: 'set_workspace' });
      expect((lb.served[1] ?? 0) - onB).toBeGreaterThan(2);
      const rows = await a.sqlOk(owner.token, ws.id, "SELECT body FROM notes WHERE body LIKE 'bridge on %' ORDER BY id");
      expect(rows.rows.map((r: { body: string }) => r.body)).toEqual(['bridge on a', 'bridge on b']);
    } finally {
      await client.close();
    }
  });
});
