import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ERROR_STATUS } from '@wds/errors';
import { routes } from '../src/app.js';
import { exclusionOf } from '../src/mcp/tools.js';
import { Harness, describe, eventually, expect, test, waitForStfQueue } from './support.js';

/**
 * The MCP interface end to end: the SDK's own client over Streamable HTTP against the app served on 127.0.0.1.
 * Every tool is an operation of the route list, run by the same pipeline as its HTTP route.
 */
const FAKE_ID = '01900000-0000-7000-8000-000000000000';

type ToolResult = { isError?: boolean; content: { type: string; text?: string; data?: string; mimeType?: string }[]; structuredContent?: any; _meta?: any };

/** A session with every tool (`features=all`, docs/mcp.md#tool-sets): these suites cover every tool. */
async function connect(base: string, token: string | undefined, workspaceId?: string, query = 'features=all') {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (workspaceId !== undefined) headers['x-workspace-id'] = workspaceId;
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp${query ? `?${query}` : ''}`), { requestInit: { headers } });
  const client = new Client({ name: 'wds-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    call: async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolResult,
    close: () => client.close(),
  };
}

/** Arguments that satisfy a tool's required fields with harmless values (ids name nothing). */
function sampleArgs(schema: any): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const name of schema.required ?? []) args[name] = sampleValue(name, schema.properties[name]);
  return args;
}
function sampleValue(name: string, s: any): unknown {
  if (!s) return 'x';
  if (s.anyOf) return sampleValue(name, s.anyOf[0]);
  if (s.enum) return s.enum[0];
  if (s.const !== undefined) return s.const;
  switch (s.type) {
    case 'string':
      return s.format === 'uuid' || /(^id$|Id$|_id$)/.test(name) ? FAKE_ID : s.format === 'email' ? 'nobody@example.test' : 'x';
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return sampleArgs(s);
    default:
      return 'x';
  }
}

const codeOf = (r: ToolResult) => r.structuredContent?.code as string | undefined;

describe('mcp', () => {
  test('no, a malformed or a revoked credential is 401 before any tool runs', async ({ base, h, owner }) => {
    for (const auth of [undefined, 'Bearer nope', 'Bearer svc_doesnotexist', 'Basic Zm9vOmJhcg==']) {
      const r = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(auth ? { authorization: auth } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(r.status, String(auth)).toBe(401);
      expect(((await r.json()) as { code: string }).code).toBe('UNAUTHORIZED');
    }
    await expect(connect(base, 'ses_doesnotexist')).rejects.toThrow();
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'k' } });
    const c = await connect(base, k.body.key);
    await h.call('DELETE', `/api/v1/api-keys/${k.body.id}`, { token: owner.token });
    await expect(c.client.listTools()).rejects.toThrow();
  });

  test('every operation a user can call over /api/v1 is a tool, and every exclusion has its reason', async ({ base, owner }) => {
    const c = await connect(base, owner.token);
    const { tools } = await c.client.listTools();
    const names = new Set(tools.map((t) => t.name));
    const excluded: Record<string, string> = {};
    for (const r of routes) {
      const why = exclusionOf(r);
      if (why === undefined) expect(names.has(r.operation), `${r.method} ${r.path} (${r.operation}) has no tool`).toBe(true);
      else excluded[`${r.method.toUpperCase()} ${r.path}`] = why;
    }
    // A new exclusion is a decision: it is added here, with the reason in the route (or the auth mode).
    expect(Object.keys(excluded).sort()).toEqual(
      [
        'POST /api/v1/auth/token',
        'GET /api/v1/auth/sign-in-methods',
        'POST /api/v1/hooks/:hookId',
        'GET /ws',
        'GET /api/v1/stf-libraries/@d6e-ai/:name/types',
        'POST /api/v1/workspaces/:id/files/multipart',
        'POST /admin/v1/users',
        'POST /admin/v1/users/:userId/sessions',
        'POST /admin/v1/users/:userId/login-links',
        'POST /api/v1/auth/login-links/redeem',
        'POST /api/v1/auth/logout',
        'PUT /admin/v1/workspaces/:id/credentials/:provider',
        'DELETE /admin/v1/workspaces/:id/credentials/:provider',
      ].sort(),
    );
    for (const why of Object.values(excluded)) expect(why.length).toBeGreaterThan(10);
    // And no tool without an operation of the route list (besides the two that choose the workspace).
    const ops = new Set(routes.map((r) => r.operation));
    expect([...names].filter((n) => !ops.has(n as never)).sort()).toEqual(['get_current_workspace', 'set_workspace']);

    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('list_files')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('preview_sql')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('execute_sql')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get('delete_file')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get('create_document')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(byName.get('saas_proxy')?.annotations).toMatchObject({ openWorldHint: true });
    // Input schemas come from the routes' valibot schemas.
    expect(byName.get('execute_sql')?.inputSchema).toMatchObject({ properties: { sql: { type: 'string' } }, required: ['sql'] });
    expect(byName.get('download_file')?.inputSchema.properties).toHaveProperty('range');
    // The strict conversion of the OpenAPI document: bounds, grammars and stated schemas are kept. A query number is
    // the integer with its bounds, or its string form.
    const limit = byName.get('list_files')?.inputSchema.properties?.limit as any;
    expect(limit.anyOf[0]).toEqual({ type: 'integer', minimum: 1, maximum: 1000 });
    expect(limit.default).toBe(100);
    expect(limit.anyOf[1]).toMatchObject({ type: 'string' });
    const condition = byName.get('create_policy')?.inputSchema.properties?.condition as any;
    expect(condition.anyOf[0]).toMatchObject({ type: 'object', propertyNames: { pattern: '^[a-z_][a-z0-9_]*$' } });
    await c.close();
  });

  test('SQL over MCP: the same rows, errors and audit as over HTTP; a member sees only what policies allow', async ({ base, h, owner, ws }) => {
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE deals (title text, owner_id uuid)');
    const g = await h.group(owner.token, ws.id, { user_ids: [member.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'deals', operation: 'select', condition: { owner_id: '$user_id' } });
    await h.allowAll(owner.token, ws.id, [owner.id], ['deals']);
    await h.sqlOk(owner.token, ws.id, `INSERT INTO deals (title, owner_id) VALUES ('mine', '${member.id}'), ('theirs', '${owner.id}')`);

    const m = await connect(base, member.token, ws.id);
    const viaMcp = await m.call('execute_sql', { sql: 'SELECT title FROM deals ORDER BY title' });
    expect(viaMcp.isError).toBeFalsy();
    const viaHttp = await h.sql(member.token, ws.id, 'SELECT title FROM deals ORDER BY title');
    expect(viaMcp.structuredContent).toEqual(viaHttp.body);
    expect(viaMcp.structuredContent.rows).toEqual([{ title: 'mine' }]);
    expect(JSON.parse(viaMcp.content[0]?.text ?? '')).toEqual(viaHttp.body);

    const ddl = await m.call('execute_sql', { sql: 'DROP TABLE deals' });
    expect(ddl.isError).toBe(true);
    const ddlHttp = await h.sql(member.token, ws.id, 'DROP TABLE deals');
    expect(ddl.structuredContent).toEqual(ddlHttp.body);
    expect(codeOf(ddl)).toBe('DDL_FORBIDDEN');
    const denied = await m.call('execute_sql', { sql: "INSERT INTO deals (title) VALUES ('x')" });
    expect(codeOf(denied)).toBe('POLICY_DENIED');
    const invalid = await m.call('execute_sql', { sql: '' });
    expect(codeOf(invalid)).toBe('VALIDATION_ERROR');
    const preview = await m.call('preview_sql', { sql: 'SELECT title FROM deals', with_policies: true });
    const previewHttp = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, { token: member.token, body: { sql: 'SELECT title FROM deals', with_policies: true } });
    expect({ ...preview.structuredContent, proposal_id: 0 }).toEqual({ ...previewHttp.body, proposal_id: 0 });

    const log = await h.call('GET', '/api/v1/audit-logs?action=execute_sql_select', { token: owner.token, workspace: ws.id });
    const [http, mcp] = log.body;
    expect(http.transport).toBe('http');
    expect(mcp.transport).toBe('mcp');
    expect({ ...mcp, id: 0, request_id: 0, created_at: 0, transport: 0 }).toEqual({ ...http, id: 0, request_id: 0, created_at: 0, transport: 0 });
    await m.close();
  });

  test('the workspace: X-Workspace-ID, or set_workspace; none is a clear tool error; another one is refused', async ({ base, h, owner, ws }) => {
    const c = await connect(base, owner.token);
    expect((await c.call('get_current_workspace')).structuredContent).toEqual({ workspace: null, source: null });
    const none = await c.call('list_files');
    expect(none.isError).toBe(true);
    expect(codeOf(none)).toBe('BAD_REQUEST');
    expect(none.structuredContent.details).toContain('set_workspace');

    const set = await c.call('set_workspace', { workspace_id: ws.id });
    expect(set.structuredContent).toEqual({ workspace: { id: ws.id, name: ws.name, role: 'admin' } });
    expect((await c.call('get_current_workspace')).structuredContent.source).toBe('set_workspace');
    expect((await c.call('list_files')).isError).toBeFalsy();

    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'theirs');
    const refused = await c.call('set_workspace', { workspace_id: theirs.id });
    expect(codeOf(refused)).toBe('FORBIDDEN');
    expect((await c.call('get_current_workspace')).structuredContent.workspace.id).toBe(ws.id);
    expect(codeOf(await c.call('set_workspace', { workspace_id: FAKE_ID }))).toBe('NOT_FOUND');
    expect(codeOf(await c.call('set_workspace', { workspace_id: 'nope' }))).toBe('BAD_REQUEST');
    await c.close();

    // A connection that names its workspace keeps it.
    const fixed = await connect(base, owner.token, ws.id);
    expect(codeOf(await fixed.call('set_workspace', { workspace_id: theirs.id }))).toBe('BAD_REQUEST');
    await fixed.close();
  });

  test('a session belongs to the identity that opened it', async ({ base, h, owner }) => {
    const c = await connect(base, owner.token);
    const sessionId = c.transport.sessionId;
    expect(sessionId).toBeTruthy();
    const other = await h.user('other');
    const r = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${other.token}`,
        'mcp-session-id': sessionId as string,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_current_workspace', arguments: {} } }),
    });
    expect(r.status).toBe(404);
    await c.close();
  });

  test('files: upload from base64, download as base64, as an image block, and in ranges past the result cap', async ({ base, h, owner, ws }) => {
    const c = await connect(base, owner.token, ws.id);
    const text = 'hello from an agent\n'.repeat(10);
    const up = await c.call('upload_file', { filename: 'note.txt', content_type: 'text/plain', content: Buffer.from(text).toString('base64') });
    expect(up.isError).toBeFalsy();
    expect(up.structuredContent).toMatchObject({ filename: 'note.txt', size: text.length });
    const down = await c.call('download_file', { fileId: up.structuredContent.id });
    expect(down.content[0]?.text).toBe(text);
    // The same in structuredContent, for hosts that read only that; and where the bytes sit in content too.
    expect(down.structuredContent).toMatchObject({ text, content_type: 'text/plain', range: { start: 0, end: text.length - 1, total: text.length } });
    expect(JSON.parse(down.content[1]?.text as string)).toEqual({ content_type: down.structuredContent.content_type, range: down.structuredContent.range });
    const part = await c.call('download_file', { fileId: up.structuredContent.id, range: 'bytes=0-4' });
    expect(part.content[0]?.text).toBe('hello');
    expect(part.structuredContent.text).toBe('hello');
    expect(part.structuredContent.range).toEqual({ start: 0, end: 4, total: text.length });
    expect(part.structuredContent.truncated.note).toContain('bytes=5-');
    expect(JSON.parse(part.content[1]?.text as string).truncated.note).toBe(part.structuredContent.truncated.note);

    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const img = await c.call('upload_file', { filename: 'p.png', content_type: 'image/png', content: png.toString('base64') });
    const shown = await c.call('download_file', { fileId: img.structuredContent.id });
    expect(shown.content[0]).toEqual({ type: 'image', data: png.toString('base64'), mimeType: 'image/png' });
    // An image is not repeated as base64 in structuredContent: the image block is the result, with where it sits.
    expect(shown.structuredContent).toBeUndefined();
    expect(JSON.parse(shown.content[1]?.text as string)).toMatchObject({ content_type: 'image/png', range: { start: 0, total: png.length } });

    const extracted = await c.call('extract_file_text', { fileId: up.structuredContent.id, limit: 5 });
    expect(extracted.structuredContent).toMatchObject({ text: 'hello', offset: 0, next_offset: 5, total_chars: text.length });

    // The same upload over HTTP and MCP is audited alike.
    const log = await h.call('GET', '/api/v1/audit-logs?action=upload_file', { token: owner.token, workspace: ws.id });
    expect(log.body.map((e: any) => e.transport)).toEqual(['mcp', 'mcp']);
    const bad = await c.call('upload_file', { filename: 'x.txt' });
    expect(codeOf(bad)).toBe('VALIDATION_ERROR');
    await c.close();
  });

  test('an agent builds and runs automation: STF, instant run, workflow, its run record, documents', async ({ base, owner, ws }) => {
    const c = await connect(base, owner.token, ws.id);
    const ok = async (name: string, args: Record<string, unknown>) => {
      const r = await c.call(name, args);
      expect(r.isError, `${name}: ${JSON.stringify(r.structuredContent)}`).toBeFalsy();
      return r;
    };
    const stf = (
      await ok('create_stf', { name: 'double', version: '1.0.0', runtime: 'javascript', code: Buffer.from('return { n: $input.n * 2 }').toString('base64') })
    ).structuredContent;
    const [version] = (await ok('list_stf_versions', { stfId: stf.id })).structuredContent.result;
    expect((await ok('instant_run_stf', { stf_id: stf.id, input: { n: 4 } })).structuredContent).toMatchObject({ success: true, output: { n: 8 } });
    const wf = (await ok('create_workflow', { name: 'doubler', stf_steps: [{ stf_version_id: version.id, input_mappings: [] }] })).structuredContent;
    const run = await ok('execute_workflow', { workflowId: wf.id, input: { n: 21 } });
    expect(run.structuredContent).toEqual({ n: 42 });
    const runId = run._meta?.headers?.['x-workflow-run-id'];
    expect(runId).toBeTruthy();
    expect((await ok('get_workflow_run', { workflowId: wf.id, runId })).structuredContent).toMatchObject({ id: runId, status: 'succeeded' });
    // Without waiting: the run id at once, the run through the queue, then cancel of an ended run is a CONFLICT.
    const queued = (await ok('execute_workflow', { workflowId: wf.id, input: { n: 5 }, async: true })).structuredContent;
    expect(queued).toMatchObject({ status: 'queued', workflow_id: wf.id });
    let later: any;
    await eventually(async () => {
      later = (await ok('get_workflow_run', { workflowId: wf.id, runId: queued.run_id })).structuredContent;
      return later.status === 'succeeded';
    }, 20_000);
    expect(later).toMatchObject({ trigger: 'async', output: { n: 10 } });
    expect(codeOf(await c.call('cancel_workflow_run', { workflowId: wf.id, runId: queued.run_id }))).toBe('CONFLICT');

    const doc = (await ok('create_document', { title: 'Plan', doc_type: 'plan', status: 'draft', content: '# Plan\n\n## Budget\n\nTBD\n' })).structuredContent;
    const replaced = await ok('replace_document_section', { docId: doc.id, heading: 'Budget', content: '100 EUR' });
    expect(replaced.structuredContent).toMatchObject({ version: 2, content: '# Plan\n\n## Budget\n100 EUR\n' });
    expect((await ok('list_document_versions', { docId: doc.id })).structuredContent.result.map((v: any) => v.version)).toEqual([2, 1]);
    expect(codeOf(await c.call('replace_document_section', { docId: doc.id, old_text: 'absent', new_text: 'x' }))).toBe('VALIDATION_ERROR');
    await c.close();
  });

  test('an oversized /mcp body is 413 before any tool runs', async ({ base, h, owner }) => {
    const big = 'x'.repeat(h.services.config.MCP_MAX_BODY_BYTES + 10);
    const r = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_me', arguments: { pad: big } } }),
    });
    expect(r.status).toBe(413);
    // Chunked (no Content-Length): counted as it is read, the same 413; a chunked message within the limit is answered.
    const streamed = (text: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${owner.token}` },
        body: new ReadableStream({
          start(controller) {
            const bytes = new TextEncoder().encode(text);
            for (let i = 0; i < bytes.length; i += 65536) controller.enqueue(bytes.subarray(i, i + 65536));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
    const chunked = await streamed(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_me', arguments: { pad: big } } }));
    expect([chunked.status, ((await chunked.json()) as { code?: string }).code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const init = await streamed(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'chunked', version: '1' } } }));
    expect(init.status).toBe(200);
    expect(((await init.json()) as { result?: { serverInfo?: unknown } }).result?.serverInfo).toBeDefined();
  });

  test('one JSON-RPC message per request: a batch is refused; a body that is not JSON is a parse error', async ({ base, owner }) => {
    const c = await connect(base, owner.token);
    const post = (body: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${owner.token}`,
          'mcp-session-id': c.transport.sessionId as string,
          'mcp-protocol-version': '2025-06-18',
        },
        body,
      });
    const call = { jsonrpc: '2.0', method: 'tools/call', params: { name: 'get_me', arguments: {} } };
    const batch = await post(JSON.stringify([{ ...call, id: 1 }, { ...call, id: 2 }]));
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as { error: { message: string } }).error.message).toContain('Batches are not accepted');
    expect((await post('{nope')).status).toBe(400);
    await c.close();
  });

  test('a cancelled call is answered (the request carrying it ends) with a cancellation error', async ({ base, h, owner, ws }) => {
    const c = await connect(base, owner.token, ws.id);
    const stf = (await c.call('create_stf', { name: 'spin', version: '1', runtime: 'javascript', code: Buffer.from('while (true) {}').toString('base64') }))
      .structuredContent;
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${owner.token}`,
      'x-workspace-id': ws.id,
      'mcp-session-id': c.transport.sessionId as string,
      'mcp-protocol-version': '2025-06-18',
    };
    const running = fetch(`${base}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'instant_run_stf', arguments: { stf_id: stf.id } } }),
    });
    // Cancelled while it runs: once the workspace's run holds the worker.
    await waitForStfQueue(h, (q) => q.workspaces[ws.id]?.running === 1);
    const cancel = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77, reason: 'user stopped it' } }),
    });
    expect(cancel.status).toBe(202);
    const answer = (await (await running).json()) as { id: number; result: ToolResult };
    expect(answer.id).toBe(77);
    expect(answer.result.isError).toBe(true);
    expect(answer.result.structuredContent).toMatchObject({ code: 'BAD_REQUEST', error: 'The call was cancelled' });
    await c.close();
  });

  test('tools outside a workspace work whatever became of the chosen one', async ({ base, h, owner }) => {
    const doomed = await h.workspace(owner.token, 'doomed');
    const c = await connect(base, owner.token);
    await c.call('set_workspace', { workspace_id: doomed.id });
    expect((await c.call('delete_workspace')).isError).toBeFalsy();
    expect(codeOf(await c.call('list_files'))).toBe('NOT_FOUND');
    const mine = await c.call('list_workspaces');
    expect(mine.isError).toBeFalsy();
    expect(mine.structuredContent.result.map((w: any) => w.id)).not.toContain(doomed.id);
    expect((await c.call('get_me')).structuredContent.id).toBe(owner.id);
    await c.close();
  });

  test('download_file: an unsatisfiable range is a tool error; a file declared JSON that is not is answered as text', async ({ base, owner, ws }) => {
    const c = await connect(base, owner.token, ws.id);
    const f = (await c.call('upload_file', { filename: 'bad.json', content_type: 'application/json', content: Buffer.from('{not json').toString('base64') }))
      .structuredContent;
    expect((await c.call('download_file', { fileId: f.id })).content[0]?.text).toBe('{not json');
    const past = await c.call('download_file', { fileId: f.id, range: 'bytes=100-' });
    expect(past.isError).toBe(true);
    expect(codeOf(past)).toBe('VALIDATION_ERROR');
    await c.close();
  });

  test('docs/mcp.md names every tool', async ({ base, owner }) => {
    const c = await connect(base, owner.token);
    const doc = readFileSync(new URL('../../../docs/mcp.md', import.meta.url), 'utf8');
    const missing = (await c.client.listTools()).tools.map((t) => t.name).filter((n) => !doc.includes(`| \`${n}\` |`));
    expect(missing, 'run node apps/api/scripts/mcp-tools-doc.mjs and update docs/mcp.md').toEqual([]);
    await c.close();
  });

  test('every read that needs nothing but the workspace answers over MCP exactly what it answers over HTTP', async ({ base, h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE parity (x int)');
    await h.group(owner.token, ws.id, { name: 'readers', user_ids: [owner.id] });
    const c = await connect(base, owner.token, ws.id);
    const reads = routes.filter(
      (r) => r.method === 'get' && exclusionOf(r) === undefined && r.workspace !== undefined && !/:(?!id\b)[A-Za-z]+/.test(r.path),
    );
    expect(reads.length).toBeGreaterThan(15);
    for (const r of reads) {
      const path = r.path.replace(':id', ws.id) + (r.workspace === 'payload' ? `?workspace_id=${ws.id}` : '');
      const http = await h.call('GET', path, { token: owner.token, workspace: ws.id });
      const mcp = await c.call(r.operation);
      const body = mcp.isError ? mcp.structuredContent : JSON.parse(mcp.content[0]?.text ?? 'null');
      expect(body, `${r.operation}: ${JSON.stringify(mcp.structuredContent)}`).toEqual(http.body);
      expect(mcp.isError ?? false, r.operation).toBe(http.status >= 400);
    }
    await c.close();
  });

  test('every tool answers a call with a result or a tool error carrying an API error code, never a protocol error', async ({ base, h, owner, ws }) => {
    const c = await connect(base, owner.token, ws.id);
    const { tools } = await c.client.listTools();
    const failures: string[] = [];
    // Deleting the workspace goes last: the calls before it act in it.
    const ordered = [...tools.filter((t) => t.name !== 'delete_workspace'), ...tools.filter((t) => t.name === 'delete_workspace')];
    let checked = false;
    for (const tool of ordered) {
      if (tool.name === 'delete_workspace') {
        // Nothing above wedged the workspace: it still answers.
        expect((await c.call('get_workspace')).structuredContent.id).toBe(ws.id);
        checked = true;
      }
      if (tool.name === 'set_workspace') continue;
      let r: ToolResult;
      try {
        r = await c.call(tool.name, sampleArgs(tool.inputSchema));
      } catch (err) {
        failures.push(`${tool.name}: protocol error ${(err as Error).message}`);
        continue;
      }
      if (r.isError) {
        const code = codeOf(r);
        if (!code || !(code in ERROR_STATUS) || code === 'INTERNAL_ERROR') failures.push(`${tool.name}: ${JSON.stringify(r.structuredContent)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(checked).toBe(true);
    expect(codeOf(await c.call('get_workspace'))).toBe('NOT_FOUND');
    await c.close();
    void h;
  });

  test("cross-workspace: A's credential reaches nothing of B through any tool", async ({ base, h, owner, ws }) => {
    const intruder = await h.user('intruder');
    const key = await h.call('POST', '/api/v1/api-keys', { token: intruder.token, body: { name: 'agent' } });
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE secrets (v text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['secrets']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO secrets (v) VALUES ('crown jewels')");
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');

    for (const [who, token, expected] of [
      ['session', intruder.token, 'FORBIDDEN'],
      ['api key', key.body.key, 'FORBIDDEN'],
    ] as const) {
      const c = await connect(base, token, ws.id);
      const { tools } = await c.client.listTools();
      for (const tool of tools) {
        const route = routes.find((r) => r.operation === tool.name);
        if (!route || (!route.workspace && tool.name !== 'execute_workflow')) continue;
        const r = await c.call(tool.name, sampleArgs(tool.inputSchema));
        expect(r.isError, `${who} ${tool.name}`).toBe(true);
        expect(codeOf(r), `${who} ${tool.name}`).toBe(expected);
        expect(JSON.stringify(r)).not.toContain('crown jewels');
      }
      expect(codeOf(await c.call('set_workspace', { workspace_id: ws.id }))).toBe('FORBIDDEN');
      await c.close();
    }
    const unknown = await connect(base, intruder.token, FAKE_ID);
    expect(codeOf(await unknown.call('list_files'))).toBe('NOT_FOUND');
    await unknown.close();

    // A member calling an admin tool is refused as over HTTP. (A connection that names no workspace at initialize
    // lists the admin tools: the role is not known yet; with X-Workspace-ID they are not listed, mcp-profiles.test.ts.)
    const m = await connect(base, member.token);
    expect(codeOf(await m.call('set_workspace', { workspace_id: ws.id }))).toBeUndefined();
    const adminRoutes = routes.filter((x) => x.role === 'admin' && exclusionOf(x) === undefined);
    expect(adminRoutes.length).toBeGreaterThan(20);
    for (const r of adminRoutes) {
      const res = await m.call(r.operation, {});
      expect(codeOf(res), r.operation).toBe('FORBIDDEN');
    }
    await m.close();
  });
});

describe('mcp over stdio', () => {
  test('the stdio bridge (dist/mcp-stdio.js) forwards tools and calls with its key; a bad key never starts', async ({ base, h, owner, ws }) => {
    const key = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'desktop agent' } });
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (body text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
    const client = new Client({ name: 'desktop', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['dist/mcp-stdio.js', '--url', base, '--workspace', ws.id],
        env: { PATH: process.env.PATH ?? '', WDS_MCP_KEY: key.body.key },
        stderr: 'pipe',
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('execute_sql');
      const r = (await client.callTool({ name: 'execute_sql', arguments: { sql: "INSERT INTO notes (body) VALUES ('from stdio')" } })) as ToolResult;
      expect(r.isError, JSON.stringify(r)).toBeFalsy();
      const log = await h.call('GET', '/api/v1/audit-logs?action=execute_sql_insert', { token: owner.token, workspace: ws.id });
      expect(log.body[0]).toMatchObject({ transport: 'mcp', api_key_id: key.body.id });
    } finally {
      await client.close();
    }
    // Not spawnSync: the service answering it runs in this process.
    const bad = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['dist/mcp-stdio.js', '--url', base], { env: { PATH: process.env.PATH ?? '', WDS_MCP_KEY: 'svc_nope' }, timeout: 20_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain('cannot reach');
  });
});

describe('mcp limits', () => {
  test('a call past the time limit ends with TIMEOUT and keeps nothing; a large result is cut with a way to page', async () => {
    const h = await Harness.create({ MCP_MAX_TIMEOUT_MS: '1000', SQL_STATEMENT_TIMEOUT_MS: '20000', MCP_MAX_RESULT_BYTES: '2048', MCP_MAX_SESSIONS: '10' });
    try {
      const base = await h.listen();
      const owner = await h.user('owner');
      const ws = await h.workspace(owner.token, 'limits');
      await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (x bigint)');
      await h.allowAll(owner.token, ws.id, [owner.id], ['t']);
      const c = await connect(base, owner.token, ws.id);
      const slow = await c.call('execute_sql', { sql: 'INSERT INTO t (x) SELECT g FROM generate_series(1, 100000000000) g' });
      expect(slow.isError).toBe(true);
      expect(codeOf(slow)).toBe('TIMEOUT');
      expect((await h.sqlOk(owner.token, ws.id, 'SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }]);
      const audit = await h.call('GET', '/api/v1/audit-logs?action=execute_sql_insert', { token: owner.token, workspace: ws.id });
      expect(audit.body).toEqual([]);

      await h.sqlOk(owner.token, ws.id, 'INSERT INTO t (x) SELECT g FROM generate_series(1, 400) g');
      const big = await c.call('execute_sql', { sql: 'SELECT x FROM t ORDER BY x' });
      expect(big.isError).toBeFalsy();
      expect(Buffer.byteLength(big.content[0]?.text ?? '')).toBeLessThanOrEqual(2048);
      expect(big.structuredContent.truncated.total).toBe(400);
      expect(big.structuredContent.rows.length).toBe(big.structuredContent.truncated.shown);
      expect(big.structuredContent.truncated.note).toContain('LIMIT/OFFSET');
      const list = await c.call('list_audit_logs', { limit: 200 });
      expect(list.structuredContent.truncated?.note ?? '').toContain('offset');
      // One row larger than a result: none is shown, and the note says how to ask for less.
      await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (body text)');
      await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
      await h.sqlOk(owner.token, ws.id, `INSERT INTO notes (body) VALUES ('${'x'.repeat(5000)}')`);
      const long = await c.call('execute_sql', { sql: 'SELECT body FROM notes' });
      expect(Buffer.byteLength(long.content[0]?.text ?? '')).toBeLessThanOrEqual(2048);
      expect(long.structuredContent.truncated).toMatchObject({ shown: 0, total: 1 });

      // MCP_MAX_SESSIONS 10: one user holds at most one session; opening another closes the older one. A connection
      // without X-Workspace-ID then meets 404; one with it is served without its session (docs/mcp.md#sessions-across-processes).
      const bare = await connect(base, owner.token);
      const second = await connect(base, owner.token, ws.id);
      await expect(bare.client.listTools()).rejects.toThrow();
      expect((await c.call('get_me')).isError).toBeFalsy();
      expect((await second.call('get_me')).isError).toBeFalsy();
      await second.close();
    } finally {
      await h.close();
    }
  });
});
