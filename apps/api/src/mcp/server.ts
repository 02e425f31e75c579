import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { OPERATIONS } from '@wds/audit';
import { badRequest, internalErrorBody, ServiceError } from '@wds/errors';
import type { Principal } from '@wds/identity';
import type { Context, Hono } from 'hono';
import { readBodyText } from '../http/body-limit.js';
import type { AppEnv } from '../http/env.js';
import { classifyError } from '../http/errors.js';
import { checkJsonValue, checkPathParams } from '../http/input.js';
import { limitCaller, limitWorkspace } from '../http/rate-limit.js';
import {
  type AnyRoute,
  authenticateBearer,
  checkWorkspaceHeader,
  cachedAccess,
  invoke,
  runsInTransaction,
  type Transport,
  workspaceAccess,
} from '../http/route.js';
import type { Services } from '../services.js';
import { withNextStep } from './next-steps.js';
import { originAllowed, originRefused } from './origin.js';
import { type ListedTool, selectTools, toolRequestOf } from './profiles.js';
import { type ProgressReport, ProgressStreams } from './progress.js';
import { servesSessionless } from './sessionless.js';
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
  /** The call's progress notifications, when it asked for them (progress.ts). */
  progress?: ProgressReport | undefined;
}

interface Session {
  id: string;
  /** The identity the session belongs to: the same user through the same kind of credential (key, scope). */
  owner: string;
  userId: string;
  /** The tool calls in progress, by JSON-RPC id: a cancellation aborts one. */
  calls: Map<string | number, AbortController>;
  transport: WebStandardStreamableHTTPServerTransport;
  /** Chosen with set_workspace (X-Workspace-ID, when a request sends it, names the workspace instead). */
  workspaceId: string | undefined;
  lastUsed: number;
  /** The tools chosen at initialize (profiles.ts): the only ones listed and callable. */
  tools: Tool[];
  toolNames: Set<string>;
}

const ownerOf = (p: Principal) => `${p.user.id}:${p.kind}:${p.apiKeyId ?? ''}:${p.scopedWorkspaceId ?? ''}`;

const WORKSPACE_TOOLS: Tool[] = [
  {
    name: 'set_workspace',
    description:
      'Choose the workspace the later tool calls of this session act in (list_workspaces names yours). Call it first when a tool answers "No workspace chosen". Answers the workspace and your role in it.',
    inputSchema: {
      type: 'object',
      properties: { workspace_id: { type: 'string', format: 'uuid', description: "The workspace's id, from list_workspaces" } },
      required: ['workspace_id'],
    },
    annotations: { title: 'set workspace', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  {
    name: 'get_current_workspace',
    description: 'The workspace tool calls act in and your role in it, or null when none is chosen (then call set_workspace).',
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
  private readonly toolList: ListedTool[];
  private readonly progress = new ProgressStreams();

  constructor(
    private readonly services: Services,
    routes: readonly AnyRoute[],
  ) {
    this.tools = toolsOf(routes);
    this.toolList = [
      ...WORKSPACE_TOOLS.map((tool) => ({ tool, route: undefined })),
      ...[...this.tools.values()].map((t) => ({
        tool: { name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations, _meta: { 'wds/rest': t.rest } } as Tool,
        route: t.route,
      })),
    ];
  }

  mount(app: Hono<AppEnv>): void {
    app.all('/mcp', (c) => this.handle(c));
  }

  private async handle(c: Context<AppEnv>): Promise<Response> {
    // Before the credential: a page on a foreign origin learns nothing, not even whether its token is good (origin.ts).
    if (!originAllowed(this.services.config, c.req.header('origin'))) return originRefused();
    const principal = await authenticateBearer(this.services, c.req.header('authorization'));
    c.set('principal', principal);
    limitCaller(c, principal);
    const header = c.req.header('x-workspace-id');
    const caller: RequestCaller = { principal, c, headerWorkspaceId: header === undefined ? undefined : checkWorkspaceHeader(header) };

    // Tool results come back on the POST; the service sends nothing unasked, so there is no standalone SSE stream.
    if (c.req.method === 'GET') return new Response(null, { status: 405, headers: { allow: 'POST, DELETE' } });
    const sessionId = c.req.header('mcp-session-id');
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    const message = c.req.method === 'POST' ? await readMessage(c) : undefined;
    // A session this process never saw, on a request that names its workspace: served without one (sessionless.ts).
    const sessionless = servesSessionless({ method: c.req.method, sessionId, known: session !== undefined, headerWorkspaceId: caller.headerWorkspaceId, message });
    // Another identity's session id is answered as an unknown one: it reveals nothing and reaches nothing.
    if (!sessionless && sessionId !== undefined && (!session || session.owner !== ownerOf(principal))) return sessionNotFound();
    if (c.req.method !== 'POST') {
      if (!session) throw badRequest('Mcp-Session-Id is required', 'open a session with an initialize request first');
      return session.transport.handleRequest(c.req.raw);
    }

    if (message === undefined) return jsonRpcError(400, -32700, 'Parse error: the body is not one JSON-RPC message');
    // One message per request (as in the current protocol): a batch would run many calls for one request's budget.
    if (Array.isArray(message)) return jsonRpcError(400, -32600, 'Batches are not accepted: send one JSON-RPC message per request');
    const m = message as { method?: unknown; params?: { requestId?: unknown } };
    if (session && m.method === 'notifications/cancelled') {
      // Handled here, not by the SDK: it would drop the cancelled call's answer, and the request waiting for that
      // answer would never end. The call learns of it through its signal and answers an error instead.
      session.calls.get(m.params?.requestId as string | number)?.abort();
      return new Response(null, { status: 202 });
    }
    // A sessionless request picks its tools as an initialize would (profiles.ts): nothing of it is kept.
    const target = sessionless ? this.open(principal, await this.toolsFor(c, caller), true) : (session ?? this.open(principal, await this.toolsFor(c, caller)));
    target.lastUsed = Date.now();
    const answer = target.transport.handleRequest(c.req.raw, {
      parsedBody: message,
      authInfo: { token: '', clientId: principal.user.id, scopes: [], extra: { caller } },
    });
    // A sessionless transport serves this one request (JSON answers: complete once handleRequest resolves); it
    // sends no progress (progress.ts streams it on a session's own request).
    if (sessionless) {
      void answer.finally(() => target.transport.close().catch(() => undefined));
      return answer;
    }
    if (!session || !ProgressStreams.asks(message, c.req.header('accept'))) return answer;
    return this.progress.respond(session, session.id, message.id, message.params._meta.progressToken, answer);
  }

  /**
   * A session for an initialize request (the transport refuses anything else without a session id), or with
   * `sessionless` the transport of one request that keeps nothing (sessionless.ts): never in the session table.
   */
  private open(principal: Principal, tools: Tool[], sessionless = false): Session {
    const { config } = this.services;
    const session: Session = {
      tools,
      toolNames: new Set(tools.map((t) => t.name)),
      id: '',
      owner: ownerOf(principal),
      userId: principal.user.id,
      transport: undefined as never,
      workspaceId: undefined,
      lastUsed: Date.now(),
      calls: new Map(),
    };
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: sessionless ? undefined : () => randomUUID(),
      enableJsonResponse: true,
      maxRequestBodySize: config.MCP_MAX_BODY_BYTES,
      onsessioninitialized: (id) => {
        // Only a session that exists counts: room is made for it now, the user's own oldest first.
        this.makeRoom(session.userId);
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
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: session.tools }));
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const caller = (extra.authInfo?.extra as { caller?: RequestCaller } | undefined)?.caller;
      if (!caller) return errorResult(new ServiceError('UNAUTHORIZED', 'Missing or invalid token').toBody());
      // A tool outside the session's set is unknown to it, as the MCP spec answers an unknown tool.
      if (!session.toolNames.has(req.params.name)) {
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`, {
          hint: 'tools/list names the tools of this session; connect with features=… or tools=… for others (docs/mcp.md#tool-sets)',
        });
      }
      const cancel = new AbortController();
      session.calls.set(extra.requestId, cancel);
      // Cancelled (notifications/cancelled), or its HTTP request gone: the signal stops what honours it (stopsWhenAborted).
      const signal = AbortSignal.any([cancel.signal, extra.signal, caller.c.req.raw.signal]);
      const progress = this.progress.reporter(session, extra.requestId);
      try {
        return await this.call(session, progress ? { ...caller, progress } : caller, req.params.name, req.params.arguments ?? {}, signal);
      } finally {
        session.calls.delete(extra.requestId);
      }
    });
    void server.connect(transport);
    return session;
  }

  /**
   * The tools of a new session: what its initialize request asks for (profiles.ts), without those the credential can
   * never run. The role is known when the connection names its workspace (X-Workspace-ID, or a scoped JWT's).
   */
  private async toolsFor(c: Context<AppEnv>, caller: RequestCaller): Promise<Tool[]> {
    const { principal } = caller;
    const workspaceId = caller.headerWorkspaceId ?? principal.scopedWorkspaceId ?? undefined;
    let role: string | undefined;
    if (workspaceId !== undefined) {
      // A workspace the caller cannot reach lists every tool: each call is refused by the route as it would be anyway.
      role = await cachedAccess(this.services, principal, workspaceId).then(
        (a) => a.role as string,
        () => undefined,
      );
    }
    return selectTools(this.toolList, toolRequestOf(c.req.url, (name) => c.req.header(name)), principal, role);
  }

  /** Idle sessions go; then a user at their share loses their oldest, and a full process its least recently used. */
  private makeRoom(userId: string): void {
    const { config } = this.services;
    const idle = Date.now() - config.MCP_SESSION_IDLE_SECONDS * 1000;
    for (const s of this.sessions.values()) if (s.lastUsed < idle) this.close(s);
    const mine = [...this.sessions.values()].filter((s) => s.userId === userId);
    if (mine.length >= Math.max(1, Math.floor(config.MCP_MAX_SESSIONS / 10))) this.close(oldest(mine));
    if (this.sessions.size >= config.MCP_MAX_SESSIONS) this.close(oldest([...this.sessions.values()]));
  }

  private close(session: Session | undefined): void {
    if (!session) return;
    this.sessions.delete(session.id);
    for (const call of session.calls.values()) call.abort();
    void session.transport.close().catch(() => undefined);
  }

  /** Every tool error is a result with the API's error envelope, never a protocol error. */
  private async call(session: Session, caller: RequestCaller, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const requestId = caller.c.var.requestId;
    const started = performance.now();
    const result = await this.answer(session, caller, name, args, signal);
    const code = result.isError ? (result.structuredContent as { code?: string } | undefined)?.code : undefined;
    this.services.logger.info({ req_id: requestId, tool: name, ms: Math.round((performance.now() - started) * 10) / 10, ...(code ? { code } : {}) }, 'tool call');
    return result;
  }

  private async answer(session: Session, caller: RequestCaller, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
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
      return errorResult(k.error ? withNextStep(k.error.toBody()) : internalErrorBody(requestId));
    }
  }

  private workspaceOf(session: Session, caller: RequestCaller): string | undefined {
    return caller.headerWorkspaceId ?? session.workspaceId;
  }

  /**
   * Runs a tool within the workspace's mcp_timeout_ms. What a call past it leaves depends on the operation:
   * - a transactional write rolls back (it may not commit once abandoned; once it commits, the timer waits for it);
   * - a self-bounded one (execute_sql) ends itself at the deadline and keeps nothing, so it is not raced;
   * - a read is simply abandoned;
   * - a run of user code (an STF run, a waiting workflow execution: `stopsWhenAborted`) is stopped through its signal:
   *   the runtime interrupts it and frees its slot, a workflow run ends `cancelled` with its later steps not started;
   * - any other write (uploads, provider calls) is told through its signal and goes
   *   on under its own limits; the answer says its outcome is recorded and must be checked before repeating it.
   */
  private async run(tool: ToolShape, session: Session, caller: RequestCaller, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const { services } = this;
    const { principal } = caller;
    const { route } = tool;
    const options = route.mcp && !('exclude' in route.mcp) ? route.mcp : {};
    const workspaceId = this.workspaceOf(session, caller);
    const actsInWorkspace = route.workspace !== undefined || options.workspace === true;
    if (actsInWorkspace && workspaceId === undefined) {
      throw badRequest('No workspace chosen', 'call set_workspace with a workspace_id from list_workspaces (or send the X-Workspace-ID header on the MCP connection)');
    }
    const split = splitArguments(tool, args, actsInWorkspace ? workspaceId : undefined);
    checkPathParams(split.params);

    // The workspace's mcp_timeout_ms bounds the call; its access is resolved (and cached) for invoke as well.
    const own =
      actsInWorkspace && workspaceId !== undefined
        ? (await workspaceAccess(services, this.lookup(caller), principal, workspaceId)).workspace.mcp_timeout_ms
        : DEFAULT_TIMEOUT_MS;
    const limitMs = Math.min(own, services.config.MCP_MAX_TIMEOUT_MS);
    const mode: Mode = !OPERATIONS[route.operation].mutates
      ? 'read'
      : options.selfBounded
        ? 'self'
        : options.stopsWhenAborted
          ? 'stops'
          : runsInTransaction(route)
            ? 'rollback'
            : 'runs-on';

    const state = { timedOut: false, committing: false };
    const deadlineAt = Date.now() + limitMs;
    const deadline = new AbortController();
    const timer = setTimeout(() => {
      if (state.committing) return; // its commit is under way: the answer is the commit's
      state.timedOut = true;
      deadline.abort(new ServiceError('TIMEOUT', 'The tool call took longer than the workspace allows'));
    }, limitMs);
    const meta: Record<string, string> = {};
    const callSignal = AbortSignal.any([signal, deadline.signal]);
    const transport = this.transportFor(caller, split, workspaceId, callSignal, meta, deadlineAt, () => {
      if (callSignal.aborted) return false;
      state.committing = true;
      return true;
    });
    try {
      const work = invoke(services, route, transport, {
        principal,
        naming: { pathId: split.params.id, payloadId: workspaceId, payloadWhere: 'connection' },
        params: split.params,
        readBody: async () => split.body,
        query: split.query,
      });
      // Past the deadline the answer is the timeout; what the work still does ends as `mode` says.
      work.catch(() => undefined);
      const ended = new Promise<never>((_, reject) => callSignal.addEventListener('abort', () => reject(callSignal.reason), { once: true }));
      ended.catch(() => undefined);
      const result = mode === 'self' ? await work : await Promise.race([work, ended]);
      const headers = Object.keys(meta).length ? { headers: meta } : undefined;
      if (result instanceof Response) return await responseResult(result, services.config.MCP_MAX_RESULT_BYTES, headers);
      return capJson(result ?? null, services.config.MCP_MAX_RESULT_BYTES, pagingHint(tool.name, tool.query), headers);
    } catch (err) {
      // A self-bounded operation's own timeout is the deadline: an error at or past it is that timeout.
      if (state.timedOut || (mode === 'self' && Date.now() >= deadlineAt)) throw timeoutError(mode, limitMs);
      if (signal.aborted) throw badRequest('The call was cancelled', mode === 'runs-on' ? OUTCOME_RECORDED : mode === 'stops' ? STOPPED : 'nothing it did was kept');
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
    meta: Record<string, string> = {},
    deadlineAt?: number,
    beginCommit: () => boolean = () => !signal.aborted,
  ): Transport {
    return {
      name: 'mcp',
      requestId: caller.c.var.requestId,
      signal,
      beginCommit,
      remainingMs: () => (deadlineAt === undefined ? undefined : Math.max(1, deadlineAt - Date.now())),
      ...(caller.progress ? { progress: caller.progress } : {}),
      header: (name) => split.headers[name.toLowerCase()],
      setHeader: (name, value) => {
        if (name.toLowerCase() !== 'connection') meta[name.toLowerCase()] = value;
      },
      // An upload's fields arrive as tool arguments: the JSON upload route reads them as the JSON body it expects.
      bodyStream: () => Readable.from([Buffer.from(JSON.stringify(split.body ?? null))]),
      workspaceId: () => {
        if (workspaceId === undefined) throw badRequest('No workspace chosen', 'call set_workspace with a workspace_id from list_workspaces (or send X-Workspace-ID)');
        return workspaceId;
      },
      limitWorkspace: (id) => limitWorkspace(caller.c, id),
    };
  }

  /** The transport of a lookup outside any operation (workspace access for the timeout and the session tools). */
  private lookup(caller: RequestCaller): Transport {
    return this.transportFor(caller, { headers: {}, body: null }, undefined, caller.c.req.raw.signal);
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

const OUTCOME_RECORDED =
  'it was not stopped: it goes on under its own time limits and its outcome is recorded (the audit log; a workflow run in list_workflow_runs); check it before repeating the call';

const STOPPED =
  'it was stopped: an STF run was interrupted (its sql() writes rolled back); a workflow run ended cancelled, its later steps not started (list_workflow_runs shows it)';

/** What becomes of a call's work when it is cancelled or out of time (run). */
type Mode = 'read' | 'self' | 'rollback' | 'stops' | 'runs-on';

function timeoutError(mode: Mode, limitMs: number): ServiceError {
  const what = {
    read: 'nothing was changed',
    self: 'the statement was cancelled and rolled back',
    rollback: 'what it did was rolled back',
    stops: STOPPED,
    'runs-on': OUTCOME_RECORDED,
  }[mode];
  return new ServiceError('TIMEOUT', 'The tool call took longer than the workspace allows', `mcp_timeout_ms is ${limitMs}; ${what}`);
}

/** The JSON-RPC message of a POST (413 past MCP_MAX_BODY_BYTES: declared, or counted as it is read); undefined: not JSON. */
async function readMessage(c: Context<AppEnv>): Promise<unknown> {
  const text = await readBodyText(c);
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const jsonRpcError = (status: number, code: number, message: string) =>
  Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status });

const oldest = (sessions: Session[]) => sessions.reduce<Session | undefined>((a, s) => (a === undefined || s.lastUsed < a.lastUsed ? s : a), undefined);

const sessionNotFound = () =>
  Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 });
