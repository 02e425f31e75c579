import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { routes } from '../src/app.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Principal } from '@wds/identity';
import { CORE_TOOLS, DEFAULT_TOOLS, FEATURES, MAX_DEFAULT_TOOLS, credentialMayRun, featureOf } from '../src/mcp/profiles.js';
import { toolsOf } from '../src/mcp/tools.js';
import { Harness, describe, expect, test } from './support.js';

/**
 * Tool sets (docs/mcp.md#tool-sets), the read tools hosts may auto-approve, and descriptions written for models:
 * the official SDK client over Streamable HTTP against the app on 127.0.0.1.
 */

/** The default profile's tool list may not grow past this many tokens (characters / 4 of its JSON). */
const DEFAULT_TOKEN_BUDGET = 8_000;

type ToolResult = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: any };

async function connect(base: string, token: string, opts: { workspaceId?: string; query?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...opts.headers };
  if (opts.workspaceId !== undefined) headers['x-workspace-id'] = opts.workspaceId;
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp${opts.query ? `?${opts.query}` : ''}`), { requestInit: { headers } });
  const client = new Client({ name: 'wds-profiles-test', version: '1.0.0' });
  await client.connect(transport);
  const list = async () => (await client.listTools()).tools;
  return {
    client,
    list,
    names: async () => (await list()).map((t) => t.name),
    call: async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolResult,
    close: () => client.close(),
  };
}

/** Every tool of the service: one per operation that is a tool, and the two session tools. */
const ALL_TOOLS = ['set_workspace', 'get_current_workspace', ...toolsOf(routes).keys()];
const routeOf = (name: string) => routes.find((r) => r.operation === name);
const tokensOf = (tools: Tool[]) => Math.ceil(JSON.stringify({ tools }).length / 4);
/** What hosts hand the model: name, description and input schema (not annotations or _meta). */
const modelTokensOf = (tools: Tool[]) =>
  Math.ceil(JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }))).length / 4);

/** A call of a tool the session does not have is the MCP unknown-tool error (a protocol error), not a run. */
async function expectUnknownTool(c: Awaited<ReturnType<typeof connect>>, name: string, args: Record<string, unknown> = {}) {
  const err = await c.call(name, args).then(
    (r) => r,
    (e: unknown) => e,
  );
  expect(err, name).toBeInstanceOf(McpError);
  expect((err as McpError).code).toBe(ErrorCode.InvalidParams);
  expect((err as McpError).message).toContain(`Unknown tool: ${name}`);
}

describe('mcp tool sets', () => {
  test('the default profile: at most 40 tools within its token budget; features=all lists every tool', async ({ base, owner, ws }) => {
    const c = await connect(base, owner.token, { workspaceId: ws.id });
    const tools = await c.list();
    const names = tools.map((t) => t.name);
    expect(names.length).toBeLessThanOrEqual(MAX_DEFAULT_TOOLS);
    expect(new Set(names)).toEqual(new Set(DEFAULT_TOOLS));
    for (const n of ['query_sql', 'list_tables', 'describe_table', 'execute_sql', 'upload_file', 'execute_workflow', 'instant_run_stf', 'propose_sql', 'set_workspace']) {
      expect(names).toContain(n);
    }
    expect(names).not.toContain('delete_workspace');
    const defaultTokens = tokensOf(tools);
    expect(defaultTokens, `the default tool list is ${defaultTokens} tokens`).toBeLessThanOrEqual(DEFAULT_TOKEN_BUDGET);
    await c.close();

    const all = await connect(base, owner.token, { workspaceId: ws.id, query: 'features=all' });
    const everything = await all.list();
    // A session token of the workspace's admin may run every tool: the full list is every tool of the service.
    expect(new Set(everything.map((t) => t.name))).toEqual(new Set(ALL_TOOLS));
    process.stdout.write(
      `tool list (tools/list JSON / what a model sees): default ${tools.length} tools, ~${defaultTokens} / ~${modelTokensOf(tools)} tokens; ` +
        `all ${everything.length} tools, ~${tokensOf(everything)} / ~${modelTokensOf(everything)} tokens\n`,
    );
    await all.close();
  });

  test('every tool is in one feature group, and features=<groups> lists those groups and the core tools, by query or header', async ({ base, owner, ws }) => {
    for (const name of ALL_TOOLS) expect(featureOf(name), name).toBeDefined();
    const groups = new Set(ALL_TOOLS.map(featureOf));
    for (const f of FEATURES) expect(groups.has(f), `feature ${f} has tools`).toBe(true);

    const expected = ALL_TOOLS.filter((n) => ['core', 'sql', 'files'].includes(featureOf(n) ?? ''));
    const viaQuery = await connect(base, owner.token, { workspaceId: ws.id, query: 'features=sql,files' });
    const viaHeader = await connect(base, owner.token, { workspaceId: ws.id, headers: { 'x-mcp-features': 'sql, files' } });
    for (const c of [viaQuery, viaHeader]) {
      const names = await c.names();
      for (const n of CORE_TOOLS) expect(names).toContain(n);
      expect(new Set(names)).toEqual(new Set(expected));
      expect(names).toContain('delete_file');
      expect(names).not.toContain('execute_workflow');
      await expectUnknownTool(c, 'execute_workflow', { workflowId: ws.id });
    }
    await viaQuery.close();
    await viaHeader.close();

    // A typo is refused at initialize, not answered with a smaller set.
    await expect(connect(base, owner.token, { query: 'features=sqll' })).rejects.toThrow();
    await expect(connect(base, owner.token, { headers: { 'x-mcp-tools': 'no_such_tool' } })).rejects.toThrow();
  });

  test('tools=a,b (query or X-MCP-Tools) lists exactly those; another tool is unknown to the session and does not run', async ({ base, h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE picked (v text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['picked']);
    const viaQuery = await connect(base, owner.token, { workspaceId: ws.id, query: 'tools=query_sql,list_tables' });
    const viaHeader = await connect(base, owner.token, { workspaceId: ws.id, headers: { 'x-mcp-tools': 'query_sql,list_tables' } });
    for (const c of [viaQuery, viaHeader]) {
      expect((await c.names()).sort()).toEqual(['list_tables', 'query_sql']);
      await expectUnknownTool(c, 'execute_sql', { sql: "INSERT INTO picked (v) VALUES ('should not be')" });
      await expectUnknownTool(c, 'no_such_tool');
      expect((await c.call('query_sql', { sql: 'SELECT count(*)::int AS n FROM picked' })).structuredContent.rows).toEqual([{ n: 0 }]);
      await c.close();
    }
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT count(*)::int AS n FROM picked')).rows).toEqual([{ n: 0 }]);
  });

  test('read_only (query or X-MCP-Read-Only) lists only tools that change nothing; a write is unknown to it', async ({ base, h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE kept (v text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['kept']);
    for (const opts of [
      { query: 'read_only=true&features=all' },
      { headers: { 'x-mcp-read-only': 'true', 'x-mcp-features': 'all' } },
      { query: 'read_only=1' },
    ]) {
      const c = await connect(base, owner.token, { workspaceId: ws.id, ...opts });
      const tools = await c.list();
      expect(tools.length).toBeGreaterThan(10);
      for (const t of tools) if (t.name !== 'set_workspace') expect(t.annotations?.readOnlyHint, t.name).toBe(true);
      const names = tools.map((t) => t.name);
      for (const n of ['query_sql', 'list_tables', 'describe_table', 'set_workspace', 'get_current_workspace']) expect(names).toContain(n);
      for (const n of ['execute_sql', 'delete_file', 'execute_workflow', 'upload_file']) expect(names).not.toContain(n);
      await expectUnknownTool(c, 'execute_sql', { sql: "INSERT INTO kept (v) VALUES ('written')" });
      await c.close();
    }
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT count(*)::int AS n FROM kept')).rows).toEqual([{ n: 0 }]);
  });

  test('tools the credential can never run are not listed: session-only for API keys and JWTs, admin tools for members', async ({ base, h, owner, ws }) => {
    const key = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'agent' } });
    const sessionOnly = routes.filter((r) => (r.auth === 'session' || r.auth === 'login') && toolsOf(routes).has(r.operation)).map((r) => r.operation);
    expect(sessionOnly).toEqual(expect.arrayContaining(['create_workspace', 'create_api_key', 'list_api_keys', 'revoke_api_key']));

    const person = await connect(base, owner.token, { workspaceId: ws.id, query: 'features=all' });
    expect(await person.names()).toEqual(expect.arrayContaining(sessionOnly));
    await person.close();

    const agent = await connect(base, key.body.key, { workspaceId: ws.id, query: 'features=all' });
    const agentNames = await agent.names();
    for (const n of sessionOnly) expect(agentNames, n).not.toContain(n);
    expect(agentNames).toContain('delete_workspace'); // the key's user is the admin
    await expectUnknownTool(agent, 'create_api_key', { name: 'escalate' });
    await agent.close();
    const keys = await h.call('GET', '/api/v1/api-keys', { token: owner.token });
    expect(keys.body.map((k: { name: string }) => k.name)).toEqual(['agent']);

    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    const adminOnly = routes.filter((r) => r.role === 'admin' && toolsOf(routes).has(r.operation)).map((r) => r.operation);
    expect(adminOnly).toEqual(expect.arrayContaining(['delete_workspace', 'add_member', 'list_audit_logs']));
    const m = await connect(base, member.token, { workspaceId: ws.id, query: 'features=all' });
    const memberNames = await m.names();
    for (const n of adminOnly) expect(memberNames, n).not.toContain(n);
    expect(memberNames).toContain('execute_sql');
    await expectUnknownTool(m, 'delete_workspace');
    await m.close();
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: owner.token })).status).toBe(200);

    // The workspace's admin sees them.
    const admin = await connect(base, owner.token, { workspaceId: ws.id, query: 'features=admin' });
    expect(await admin.names()).toEqual(expect.arrayContaining(['delete_workspace', 'add_member', 'list_audit_logs']));
    await admin.close();
  });
});

describe('mcp tool sets: JWTs and the stdio bridge', () => {
  test('a JWT is never shown the session-only tools; a scoped one not create_workspace; an unscoped one may create', () => {
    const principal = (kind: Principal['kind'], scopedWorkspaceId: string | null) =>
      ({ user: { id: 'u' }, kind, apiKeyId: null, sessionId: null, scopedWorkspaceId, expiresAt: null }) as unknown as Principal;
    const may = (name: string, p: Principal, role?: string) => credentialMayRun(routeOf(name), p, role);
    for (const p of [principal('jwt', null), principal('jwt', '01900000-0000-7000-8000-000000000000'), principal('api_key', null)]) {
      for (const n of ['create_api_key', 'list_api_keys', 'revoke_api_key']) expect(may(n, p), `${p.kind} ${n}`).toBe(false);
    }
    expect(may('create_workspace', principal('jwt', null))).toBe(true);
    expect(may('create_workspace', principal('jwt', '01900000-0000-7000-8000-000000000000'))).toBe(false);
    expect(may('create_workspace', principal('api_key', null))).toBe(false);
    expect(may('create_api_key', principal('session', null))).toBe(true);
    // The role decides only when it is known.
    expect(may('delete_workspace', principal('jwt', null), 'member')).toBe(false);
    expect(may('delete_workspace', principal('jwt', null), 'admin')).toBe(true);
    expect(may('delete_workspace', principal('jwt', null), undefined)).toBe(true);
    expect(may('set_workspace', principal('api_key', null), 'member')).toBe(true);
  });

  test('the stdio bridge passes --read-only and --features on as the X-MCP-* headers', async ({ base, h, owner, ws }) => {
    const key = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'desktop agent' } });
    const client = new Client({ name: 'desktop', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['dist/mcp-stdio.js', '--url', base, '--workspace', ws.id, '--features', 'sql,documents', '--read-only'],
        env: { PATH: process.env.PATH ?? '', WDS_MCP_KEY: key.body.key },
        stderr: 'pipe',
      }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['query_sql', 'list_tables', 'list_documents', 'get_document']));
      for (const n of ['execute_sql', 'create_document', 'list_files']) expect(names).not.toContain(n);
    } finally {
      await client.close();
    }
  });
});

describe('mcp read tools', () => {
  test('query_sql runs a SELECT under the caller’s policies and refuses anything else, naming execute_sql', async ({ base, h, owner, ws }) => {
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE deals (title text, owner_id uuid)');
    const g = await h.group(owner.token, ws.id, { user_ids: [member.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'deals', operation: 'select', condition: { owner_id: '$user_id' } });
    await h.allowAll(owner.token, ws.id, [owner.id], ['deals']);
    await h.sqlOk(owner.token, ws.id, `INSERT INTO deals (title, owner_id) VALUES ('mine', '${member.id}'), ('theirs', '${owner.id}')`);

    const m = await connect(base, member.token, { workspaceId: ws.id });
    const tool = (await m.list()).find((t) => t.name === 'query_sql');
    expect(tool?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    const read = await m.call('query_sql', { sql: 'SELECT title FROM deals ORDER BY title' });
    expect(read.isError ?? false).toBe(false);
    expect(read.structuredContent.rows).toEqual([{ title: 'mine' }]);

    const o = await connect(base, owner.token, { workspaceId: ws.id });
    for (const sql of [
      "INSERT INTO deals (title) VALUES ('x')",
      "UPDATE deals SET title = 'changed'",
      'DELETE FROM deals',
      'DROP TABLE deals',
      'WITH gone AS (DELETE FROM deals RETURNING title) SELECT title FROM gone',
    ]) {
      const r = await o.call('query_sql', { sql });
      expect(r.isError, sql).toBe(true);
      expect(r.structuredContent.code, sql).toBe('VALIDATION_ERROR');
      expect(r.structuredContent.details, sql).toContain('execute_sql');
    }
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT title FROM deals ORDER BY title')).rows).toEqual([{ title: 'mine' }, { title: 'theirs' }]);
    // Over REST too: the same operation.
    const rest = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/query`, { token: owner.token, body: { sql: 'DELETE FROM deals' } });
    expect(rest.status).toBe(400);
    await m.close();
    await o.close();
  });

  test("list_tables and describe_table show the workspace's own tables only, never another workspace's", async ({ base, h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, note varchar(40))');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (body text)');
    const other = await h.user('other');
    const theirs = await h.workspace(other.token, 'Other');
    await h.sqlOk(other.token, theirs.id, 'CREATE TABLE secret_plans (plan text)');

    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    for (const token of [owner.token, member.token]) {
      const c = await connect(base, token, { workspaceId: ws.id, query: 'read_only=true' });
      const listed = await c.call('list_tables');
      expect(listed.isError ?? false, JSON.stringify(listed.structuredContent)).toBe(false);
      expect(listed.structuredContent.result).toEqual([
        { name: 'notes', columns: ['id', 'body', 'created_at', 'updated_at', 'deleted_at'] },
        { name: 'orders', columns: ['id', 'customer', 'note', 'created_at', 'updated_at', 'deleted_at'] },
      ]);
      expect(JSON.stringify(listed)).not.toContain('secret_plans');
      const described = await c.call('describe_table', { table: 'orders' });
      expect(described.structuredContent.name).toBe('orders');
      expect(described.structuredContent.columns.map((x: { name: string }) => x.name)).toEqual(['id', 'customer', 'note', 'created_at', 'updated_at', 'deleted_at']);
      expect(described.structuredContent.columns.slice(0, 3)).toEqual([
          { name: 'id', data_type: 'bigint', udt_name: 'int8', nullable: false, default: null, max_length: null },
          { name: 'customer', data_type: 'text', udt_name: 'text', nullable: false, default: null, max_length: null },
          { name: 'note', data_type: 'character varying', udt_name: 'varchar', nullable: true, default: null, max_length: 40 },
        ]);
      // Another workspace's table is no table here, by its logical name or by its physical one.
      for (const table of ['secret_plans', `ws_${theirs.id.replace(/-/g, '_')}_secret_plans`, "x' OR '1'='1"]) {
        const r = await c.call('describe_table', { table });
        expect(r.isError, table).toBe(true);
        expect(['NOT_FOUND', 'VALIDATION_ERROR'], table).toContain(r.structuredContent.code);
        expect(JSON.stringify(r)).not.toContain('plan text');
      }
      await c.close();
    }
    // The other workspace sees its own table only.
    const c = await connect(base, other.token, { workspaceId: theirs.id });
    expect((await c.call('list_tables')).structuredContent.result).toEqual([{ name: 'secret_plans', columns: ['id', 'plan', 'created_at', 'updated_at', 'deleted_at'] }]);
    // And it cannot name the first workspace: its tools are refused there.
    const intruder = await connect(base, other.token, { workspaceId: ws.id });
    expect((await intruder.call('list_tables')).structuredContent.code).toBe('FORBIDDEN');
    expect((await intruder.call('describe_table', { table: 'orders' })).structuredContent.code).toBe('FORBIDDEN');
    await c.close();
    await intruder.close();
  });
});

describe('mcp descriptions for models', () => {
  test('no HTTP in descriptions (the REST route is _meta["wds/rest"]); every id argument says what it names and where to find it', async ({ base, owner, ws }) => {
    const c = await connect(base, owner.token, { workspaceId: ws.id, query: 'features=all' });
    const tools = await c.list();
    const problems: string[] = [];
    for (const t of tools) {
      const d = t.description ?? '';
      if (d.length < 20) problems.push(`${t.name}: description too short`);
      if (/REST|\/api\/v1|\b(GET|POST|PUT|PATCH|DELETE) \/|\b(20[0-6]|4[0-2]\d|50[0-4])\b|X-Workspace-ID|Prefer:|HTTP Range/.test(d)) problems.push(`${t.name}: HTTP in "${d}"`);
      const route = routeOf(t.name);
      if (route) {
        if ((t._meta as Record<string, unknown> | undefined)?.['wds/rest'] !== `${route.method.toUpperCase()} ${route.path}`) problems.push(`${t.name}: no _meta wds/rest`);
      }
      for (const [name, s] of Object.entries((t.inputSchema.properties ?? {}) as Record<string, { description?: string }>)) {
        if (!/(Id|_id|_ids)$/.test(name) && !route?.path.includes(`:${name}`)) continue;
        const desc = s.description ?? '';
        if (!desc || /of the path/.test(desc)) problems.push(`${t.name}.${name}: no description`);
        else if (/Id$|_id$|_ids$/.test(name) && !/\bfrom (list_|search_|get_|drive_picker)/.test(desc) && !/resource|row you may read/.test(desc)) {
          problems.push(`${t.name}.${name}: names no tool that lists it ("${desc}")`);
        }
      }
    }
    expect(problems).toEqual([]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect((byName.get('get_workflow')?.inputSchema.properties as any)?.workflowId.description).toBe("The workflow's id, from list_workflows");
    await c.close();
  });

  test('errors name what to call next: a missing workspace names set_workspace, POLICY_DENIED the policy tools', async ({ base, h, owner, ws }) => {
    const none = await connect(base, owner.token);
    const r = await none.call('query_sql', { sql: 'SELECT 1' });
    expect(r.structuredContent).toMatchObject({ code: 'BAD_REQUEST', error: 'No workspace chosen' });
    expect(r.structuredContent.details).toContain('set_workspace');
    expect(r.structuredContent.details).toContain('list_workspaces');
    await none.close();

    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE guarded (v text)');
    const m = await connect(base, member.token, { workspaceId: ws.id });
    const denied = await m.call('query_sql', { sql: 'SELECT v FROM guarded' });
    expect(denied.structuredContent.code).toBe('POLICY_DENIED');
    for (const next of ['explain_sql', 'list_policies']) expect(denied.structuredContent.details).toContain(next);
    expect(JSON.parse(denied.content[0]?.text ?? '{}')).toEqual(denied.structuredContent);
    await m.close();
  });
});

void Harness;
