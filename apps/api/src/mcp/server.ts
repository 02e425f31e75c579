import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { badRequest, internalErrorBody, ServiceError } from '@wds/errors';
import type { Principal } from '@wds/identity';
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../http/env.js';
import { classifyError } from '../http/errors.js';
import { checkJsonValue, checkPathParams } from '../http/input.js';
import { limitCaller, limitWorkspace } from '../http/rate-limit.js';
import { type AnyRoute, authenticateBearer, checkWorkspaceHeader, invoke, type Transport, workspaceAccess } from '../http/route.js';
import type { Services } from '../services.js';
import { capJson, errorResult, pagingHint, responseResult } from './results.js';
import { splitArguments, type ToolShape, toolsOf } from './tools.js';

/** The bound of a call outside any workspace (list_workspaces, API keys): the default of mcp_timeout_ms. */
const DEFAULT_TIMEOUT_MS = 300_000;
const SERVER_INFO = { name: 'workspace-data-service', version: '1.0.0' };

/** Who sent the HTTP request a tool call arrived in: checked again on every request of a session. */
interface RequestCaller {
  principal: Principal;
  c: Context<AppEnv>;
  /** X-Workspace-ID of this request, checked to be a UUID. */
  headerWorkspaceId: string | undefined;
}

interface Session {
  id: string;
  /** The identity the session belongs to: the same user through the same kind of credential (key, scope). */
  owner: string;
  transport: WebStandardStreamableHTTPServerTransport;
  /** Chosen with set_workspace (X-Workspace-ID, when a request sends it, names the workspace instead). */
  workspaceId: string | undefined;
  lastUsed: number;
}

const ownerOf = (p: Principal) => `${p.user.id}:${p.kind}:${p.apiKeyId ?? ''}:${p.scopedWorkspaceId ?? ''}`;

const WORKSPACE_TOOLS: Tool[] = [
  {
    name: 'set_workspace',
    description:
      'Choose the workspace later tool calls of this session act in (for clients that cannot send the X-Workspace-ID header). Answers the workspace and your role in it.',
    inputSchema: { type: 'object', properties: { workspace_id: { type: 'string', format: 'uuid' } }, required: ['workspace_id'] },
    annotations: { title: 'set workspace', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  {
    name: 'get_current_workspace',
    description: 'The workspace tool calls act in (from X-Workspace-ID or set_workspace), or null when none is chosen.',
    inputSchema: { type: 'object', properties: {} },
    annotations: { title: 'get current workspace', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
];

/**
 * The MCP interface at `/mcp` (Streamable HTTP, JSON responses): one tool per operation of the route list, run by the
 * same `invoke` as the HTTP route — same authentication, workspace access, role, validation, audit (marked `mcp`),
 * invalidation and errors. A session is bound to the identity that opened it; every request authenticates again.
 */
export class McpEndpoint {
  readonly tools: Map<string, ToolShape>;
  private readonly sessions = new Map<string, Session>();
  private readonly toolList: Tool[];

  constructor(
    private readonly services: Services,
    routes: readonly AnyRoute[],
  ) {
    this.tools = toolsOf(routes);
    this.toolList = [
      ...WORKSPACE_TOOLS,
      ...[...this.tools.values()].map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations }) as Tool),
    ];
  }

  mount(app: Hono<AppEnv>): void {
    app.all('/mcp', (c) => this.handle(c));
  }

  get openSessions(): number {
    return this.sessions.size;
  }

  private async handle(c: Context<AppEnv>): Promise<Response> {
    const principal = await authenticateBearer(this.services, c.req.header('authorization'));
    c.set('principal', principal);
    limitCaller(c, principal);
    const header = c.req.header('x-workspace-id');
    const caller: RequestCaller = { principal, c, headerWorkspaceId: header === undefined ? undefined : checkWorkspaceHeader(header) };

    // Tool results come back on the POST; the service sends nothing unasked, so there is no standalone SSE stream.
    if (c.req.method === 'GET') return new Response(null, { status: 405, headers: { allow: 'POST, DELETE' } });
    const sessionId = c.req.header('mcp-session-id');
    let session: Session | undefined;
    if (sessionId !== undefined) {
      session = this.sessions.get(sessionId);
      // Another identity's session id is answered as an unknown one: it reveals nothing and reaches nothing.
      if (!session || session.owner !== ownerOf(principal)) return sessionNotFound();
    } else {
      if (c.req.method !== 'POST') throw badRequest('Mcp-Session-Id is required', 'open a session with an initialize request first');
      session = this.open(principal);
    }
    session.lastUsed = Date.now();
    return session.transport.handleRequest(c.req.raw, {
      authInfo: { token: '', clientId: principal.user.id, scopes: [], extra: { caller } },
    });
  }

  /** A new session (for an initialize request; the transport refuses anything else without a session id). */
  private open(principal: Principal): Session {
    this.sweep();
    const { config } = this.services;
    const owner = ownerOf(principal);
    const mine = [...this.sessions.values()].filter((s) => s.owner === owner);
    if (mine.length >= Math.max(1, Math.floor(config.MCP_MAX_SESSIONS / 10))) this.close(oldest(mine));
    if (this.sessions.size >= config.MCP_MAX_SESSIONS) this.close(oldest([...this.sessions.values()]));

    const session: Session = { id: '', owner, transport: undefined as never, workspaceId: undefined, lastUsed: Date.now() };
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      maxRequestBodySize: config.MCP_MAX_BODY_BYTES,
      onsessioninitialized: (id) => {
        session.id = id;
        this.sessions.set(id, session);
      },
      onsessionclosed: (id) => {
        this.sessions.delete(id);
      },
    });
    session.transport = transport;
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: {} },
      instructions:
        'Tools of a workspace data service. Calls act in the workspace named by X-Workspace-ID or chosen with set_workspace; your permissions and row policies apply as over the REST API.',
    });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.toolList }));
    server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
      const caller = (extra.authInfo?.extra as { caller?: RequestCaller } | undefined)?.caller;
      if (!caller) return errorResult(new ServiceError('UNAUTHORIZED', 'Missing or invalid token').toBody());
      return this.call(session, caller, req.params.name, req.params.arguments ?? {}, extra.signal);
    });
    void server.connect(transport);
    return session;
  }

  private close(session: Session | undefined): void {
    if (!session) return;
    this.sessions.delete(session.id);
    void session.transport.close().catch(() => undefined);
  }

  private sweep(): void {
    const idle = Date.now() - this.services.config.MCP_SESSION_IDLE_SECONDS * 1000;
    for (const s of this.sessions.values()) if (s.lastUsed < idle) this.close(s);
  }

  /** Every tool error is a result with the API's error envelope, never a protocol error. */
  private async call(session: Session, caller: RequestCaller, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const requestId = caller.c.var.requestId;
    try {
      checkJsonValue(args, 'arguments');
      if (name === 'set_workspace') return await this.setWorkspace(session, caller, args);
      if (name === 'get_current_workspace') return await this.currentWorkspace(session, caller);
      const tool = this.tools.get(name);
      if (!tool) throw new ServiceError('NOT_FOUND', `Unknown tool ${name}`, 'tools/list names every tool');
      return await this.run(tool, session, caller, args, signal);
    } catch (err) {
      const k = classifyError(err);
      if (k.log) this.services.logger[k.log.level]({ err, req_id: requestId, tool: name }, k.log.message);
      return errorResult(k.error ? k.error.toBody() : internalErrorBody(requestId));
    }
  }

  private workspaceOf(session: Session, caller: RequestCaller): string | undefined {
    return caller.headerWorkspaceId ?? session.workspaceId;
  }

  private async run(tool: ToolShape, session: Session, caller: RequestCaller, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const { services } = this;
    const { principal } = caller;
    const workspaceId = this.workspaceOf(session, caller);
    const needsWorkspace = tool.route.workspace !== undefined || tool.route.operation === 'execute_workflow';
    if (needsWorkspace && workspaceId === undefined) {
      throw badRequest('No workspace chosen', 'send the X-Workspace-ID header on the MCP connection, or call set_workspace first');
    }
    const split = splitArguments(tool, args, workspaceId);
    checkPathParams(split.params);

    // The workspace's mcp_timeout_ms bounds the call; its access is resolved (and cached) for invoke as well.
    const own =
      workspaceId !== undefined ? (await workspaceAccess(services, this.lookup(caller), principal, workspaceId)).workspace.mcp_timeout_ms : DEFAULT_TIMEOUT_MS;
    const limitMs = Math.min(own, services.config.MCP_MAX_TIMEOUT_MS);
    const deadline = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      deadline.abort(new ServiceError('TIMEOUT', 'The tool call took longer than the workspace allows'));
    }, limitMs);
    const meta: Record<string, string> = {};
    const transport = this.transportFor(caller, split, workspaceId, AbortSignal.any([signal, deadline.signal]), () => timedOut, meta, limitMs);
    try {
      const work = invoke(services, tool.route, transport, {
        principal,
        naming: { pathId: split.params.id, payloadId: workspaceId, payloadWhere: 'connection' },
        params: split.params,
        readBody: async () => split.body,
        query: split.query,
      });
      // Past the deadline the answer is the timeout; what the work still does ends in its own rollback or record.
      work.catch(() => undefined);
      const result = await Promise.race([
        work,
        new Promise<never>((_, reject) => deadline.signal.addEventListener('abort', () => reject(deadline.signal.reason), { once: true })),
      ]);
      const headers = Object.keys(meta).length ? { headers: meta } : undefined;
      if (result instanceof Response) return await responseResult(result, services.config.MCP_MAX_RESULT_BYTES, headers);
      return capJson(result ?? null, services.config.MCP_MAX_RESULT_BYTES, pagingHint(tool.name, tool.query), headers);
    } catch (err) {
      if (timedOut) {
        throw new ServiceError('TIMEOUT', 'The tool call took longer than the workspace allows', `mcp_timeout_ms is ${limitMs}; a transaction of the call was rolled back`);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private transportFor(
    caller: RequestCaller,
    split: { headers: Record<string, string>; body: unknown },
    workspaceId: string | undefined,
    signal: AbortSignal,
    timedOut: () => boolean,
    meta: Record<string, string> = {},
    limitMs?: number,
  ): Transport {
    const started = Date.now();
    return {
      name: 'mcp',
      requestId: caller.c.var.requestId,
      signal,
      timedOut,
      remainingMs: () => (limitMs === undefined ? undefined : Math.max(1, limitMs - (Date.now() - started))),
      header: (name) => split.headers[name.toLowerCase()],
      setHeader: (name, value) => {
        if (name.toLowerCase() !== 'connection') meta[name.toLowerCase()] = value;
      },
      // An upload's fields arrive as tool arguments: the JSON upload route reads them as the JSON body it expects.
      bodyStream: () => Readable.from([Buffer.from(JSON.stringify(split.body ?? null))]),
      workspaceId: () => {
        if (workspaceId === undefined) throw badRequest('No workspace chosen', 'send X-Workspace-ID or call set_workspace first');
        return workspaceId;
      },
      limitWorkspace: (id) => limitWorkspace(caller.c, id),
    };
  }

  /** The transport of a lookup outside any operation (workspace access for the timeout and the session tools). */
  private lookup(caller: RequestCaller): Transport {
    return this.transportFor(caller, { headers: {}, body: null }, undefined, caller.c.req.raw.signal, () => false);
  }

  private async setWorkspace(session: Session, caller: RequestCaller, args: Record<string, unknown>): Promise<CallToolResult> {
    const id = args.workspace_id;
    if (typeof id !== 'string') throw badRequest('workspace_id is required', 'a workspace id (UUID); list_workspaces names yours');
    const workspaceId = checkWorkspaceHeader(id);
    if (caller.headerWorkspaceId !== undefined && caller.headerWorkspaceId !== workspaceId) {
      throw badRequest('This connection names its workspace with X-Workspace-ID', 'set_workspace cannot choose another one');
    }
    const access = await workspaceAccess(this.services, this.lookup(caller), caller.principal, workspaceId);
    session.workspaceId = access.workspace.id;
    const view = { workspace: { id: access.workspace.id, name: access.workspace.name, role: access.role } };
    return { content: [{ type: 'text', text: JSON.stringify(view) }], structuredContent: view };
  }

  private async currentWorkspace(session: Session, caller: RequestCaller): Promise<CallToolResult> {
    const id = this.workspaceOf(session, caller);
    let view: Record<string, unknown> = { workspace: null, source: null };
    if (id !== undefined) {
      const access = await workspaceAccess(this.services, this.lookup(caller), caller.principal, id);
      view = {
        workspace: { id: access.workspace.id, name: access.workspace.name, role: access.role },
        source: caller.headerWorkspaceId !== undefined ? 'X-Workspace-ID' : 'set_workspace',
      };
    }
    return { content: [{ type: 'text', text: JSON.stringify(view) }], structuredContent: view };
  }
}

const oldest = (sessions: Session[]) => sessions.reduce<Session | undefined>((a, s) => (a === undefined || s.lastUsed < a.lastUsed ? s : a), undefined);

const sessionNotFound = () =>
  Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 });
