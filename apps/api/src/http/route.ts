import { OPERATIONS, type Operation, recordAudit } from '@wds/audit';
import { type Db, type Uuid, isUuid, notifyOnCommit } from '@wds/db';
import { ServiceError, badRequest, forbidden, unauthorized, validationError } from '@wds/errors';
import { CHANNEL } from '@wds/cache';
import { type Principal, authenticate, bearerToken, hashToken, isInteractiveLogin } from '@wds/identity';
import { type WorkspaceAccess, acceptPendingInvitations, resolveAccess } from '@wds/workspaces';
import type { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import type { ParamKeys } from 'hono/types';
import * as v from 'valibot';
import type { Services } from '../services.js';
import type { AppEnv } from './env.js';
import { checkAdminToken } from './admin-token.js';
import { readBodyText, requestBodyStream } from './body-limit.js';
import { checkJsonValue, checkPathParams, checkRequestText, isObjectSchema, requireObject } from './input.js';
import { limitCaller, limitWorkspace } from './rate-limit.js';
import type { OpenApiExtras } from './openapi.js';

type AnySchema = v.GenericSchema;

/**
 * Who may call a route:
 * - `user`: any valid Bearer credential; `session`: session tokens only; `login`: a person's interactive login, a
 *   session token or a JWT that no `workspace_id` claim scopes (API keys and scoped JWTs are refused);
 * - `optional`: Bearer if sent (must then be valid); `admin`: the X-Admin-Token header; `none`: anyone.
 */
export type AuthMode = 'none' | 'user' | 'session' | 'login' | 'optional' | 'admin';
/**
 * Where the workspace comes from (docs/http-api.md#where-the-workspace-comes-from): the path id, the X-Workspace-ID
 * header, or `workspace_id` in the payload — the query string of GET and DELETE, the JSON body of writes (drive sync,
 * SaaS proxy).
 */
export type WorkspaceFrom = 'path' | 'header' | 'payload';

export interface AuditInfo {
  /** Overrides the route's operation name (e.g. execute_sql_select). */
  action?: string;
  resourceId?: string | null;
  details?: Record<string, unknown>;
  /** For routes outside a workspace that still concern one (e.g. workspace create). */
  workspaceId?: string | null;
  /** For routes whose user is known only once the handler ran (a login link redeemed: the user it signed in). */
  userId?: string;
}

/**
 * What the transport an operation is reached through (HTTP, MCP) supplies beyond the validated input. Handlers use
 * this and never a transport's own request object, so every operation runs the same under both.
 */
export interface Transport {
  name: 'http' | 'mcp';
  requestId: string;
  /** Aborted when the caller is gone or the call's time is up (MCP: the workspace's mcp_timeout_ms). */
  signal: AbortSignal;
  /**
   * Asked once a transactional operation is done and about to commit: false when the call was abandoned (MCP: its
   * time ran out or the client cancelled it), and the transaction rolls back; true commits, and from then on the
   * call is no longer abandoned for running out of time.
   */
  beginCommit(): boolean;
  /** The time the call has left (MCP), to bound what it starts (a statement's timeout); undefined over HTTP. */
  remainingMs(): number | undefined;
  /**
   * Tells the caller how far a long operation got (MCP: notifications/progress, when the call gave a progressToken);
   * absent, or doing nothing, elsewhere. `progress` grows with each report; `total` when known.
   */
  progress?(progress: number, total?: number, message?: string): void;
  /** A request header (HTTP), or the tool argument that stands for it (MCP: `range` of download_file). */
  header(name: string): string | undefined;
  /** A response header (HTTP), or result metadata (MCP). */
  setHeader(name: string, value: string): void;
  /** The raw request body as bytes, for operations that stream it (uploads). */
  bodyStream(): Readable;
  /** The workspace named outside path and payload: X-Workspace-ID, or the MCP session's workspace. */
  workspaceId(): string;
  /** Charges the workspace's request budget once its access is resolved (rate-limit.ts). */
  limitWorkspace(workspaceId: string): void;
}

/** The names of an id parameter: `:id` and `:…Id` (input.ts checks them). */
type IdParamName = 'id' | `${string}Id`;

/**
 * The parameters of a Hono path as a handler gets them: one property per `:name` of the path (hono's ParamKeys),
 * ids as checked UUIDs. A misspelt name is a compile error.
 */
export type PathParams<P extends string> = { [K in ParamKeys<P>]: K extends IdParamName ? Uuid : string };

/**
 * The caller, where the route's auth puts one: signed in for `user`, `session` and `login`; maybe for `optional`
 * (always once the route resolves a workspace, whose access needs one); absent for `none` and `admin`.
 */
type PrincipalOf<A extends AuthMode, W extends WorkspaceFrom | undefined> = A extends 'user' | 'session' | 'login'
  ? { principal: Principal }
  : A extends 'optional'
    ? { principal: W extends WorkspaceFrom ? Principal : Principal | undefined }
    : {};

/** The caller's access to the workspace, for routes that name one (`workspace`). */
type AccessOf<W extends WorkspaceFrom | undefined> = W extends WorkspaceFrom ? { access: WorkspaceAccess } : {};

/** What every handler gets, whatever its route declares. */
interface BaseCtx<P extends string, B, Q> {
  services: Services;
  transport: Transport;
  db: Db;
  body: B;
  query: Q;
  params: PathParams<P>;
  requestId: string;
  /** Adds to the audit entry written (in the same transaction) for a mutating operation. */
  audit(info: AuditInfo): void;
}

/** A handler's context: the principal and the access are there only when the route's auth and workspace say so. */
export type HandlerCtx<
  P extends string,
  A extends AuthMode,
  W extends WorkspaceFrom | undefined,
  B,
  Q,
> = BaseCtx<P, B, Q> & PrincipalOf<A, W> & AccessOf<W>;

/** The context of any handler of a signed-in member in a workspace, for helpers shared by such routes. */
export type MemberCtx = HandlerCtx<string, 'user', WorkspaceFrom, unknown, unknown>;

/**
 * What a handler may answer: a Response of its own, or (for a route declaring `response`) the success body as its
 * schema takes it; anything for a route without one.
 */
export type HandlerResult<RS extends AnySchema | undefined> = RS extends AnySchema ? v.InferInput<RS> | Response : unknown;

export interface RouteDef<
  P extends string,
  A extends AuthMode,
  W extends WorkspaceFrom | undefined,
  BS extends AnySchema | undefined,
  QS extends AnySchema | undefined,
  RS extends AnySchema | undefined = undefined,
> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Hono path syntax, e.g. `/api/v1/workspaces/:id/members`: it types the handler's `params`. */
  path: P;
  operation: Operation;
  summary: string;
  auth: A;
  workspace?: W;
  role?: 'member' | 'admin';
  body?: BS;
  query?: QS;
  /** Success status; 204 sends no body. */
  status?: 200 | 201 | 202 | 204;
  /**
   * The success body (JSON) under `status`: the OpenAPI document states it (openapi.ts), the handler's return type is
   * checked against it, and the test harness validates real answers with it. Omitted: the answer is undocumented.
   */
  response?: RS;
  /** Mutating routes run in one transaction with their audit entry, unless they manage their own. */
  transaction?: boolean;
  /** The handler writes its own audit entry (inside its own transaction), so the wrapper does not. */
  auditsItself?: boolean;
  /**
   * The route checks a credential of its own, in its input (a login link's code): the unit of the failed-authentication
   * budget taken for the request stays held while the handler runs — kept when it answers 401, given back otherwise —
   * as for a Bearer token (rate-limit.ts), so parallel guesses cannot overrun the budget.
   */
  checksCredential?: boolean;
  /**
   * How MCP reaches the operation: omitted, it is a tool named after the operation; `{ exclude }` keeps it HTTP-only
   * with the reason (the MCP parity test lists them); `headers` are tool arguments handed to the handler as request
   * headers; `bodyName` names the tool argument holding a body that is not a JSON object (default `body`).
   */
  mcp?: { exclude: string } | McpOptions;
  /**
   * Which cached state a successful mutation makes stale: the workspace's (access, policies, tables — the default
   * for workspace routes), the caller's credentials, or none (the handler invalidates itself).
   */
  invalidates?: 'workspace' | 'user' | 'none';
  /** What the OpenAPI document states beyond the schemas: bodies and headers the handler handles itself (openapi.ts). */
  openapi?: OpenApiExtras;
  handler: (
    ctx: HandlerCtx<P, A, W, BS extends AnySchema ? v.InferOutput<BS> : undefined, QS extends AnySchema ? v.InferOutput<QS> : undefined>,
  ) => Promise<HandlerResult<RS>>;
}

/** How MCP adapts a route (see RouteDef.mcp). */
export interface McpOptions {
  headers?: Record<string, AnySchema>;
  bodyName?: string;
  /** The handler finds its workspace with `transport.workspaceId()` although the route declares none. */
  workspace?: boolean;
  /** The handler ends within `transport.remainingMs()` and then keeps nothing (a statement's own timeout). */
  selfBounded?: boolean;
  /**
   * The handler stops its work when `transport.signal` aborts (an STF run: its runtime stops it and frees its slot; a
   * waiting workflow execution: the run ends `cancelled`): a call cancelled or out of time leaves nothing running.
   */
  stopsWhenAborted?: boolean;
}

export type AnyRoute = RouteDef<string, AuthMode, WorkspaceFrom | undefined, AnySchema | undefined, AnySchema | undefined, AnySchema | undefined>;

export const defineRoute = <
  P extends string,
  A extends AuthMode,
  W extends WorkspaceFrom | undefined = undefined,
  BS extends AnySchema | undefined = undefined,
  QS extends AnySchema | undefined = undefined,
  RS extends AnySchema | undefined = undefined,
>(
  r: RouteDef<P, A, W, BS, QS, RS>,
): AnyRoute => r as unknown as AnyRoute;

const issuesToDetails = (issues: readonly v.BaseIssue<unknown>[]) =>
  issues.map((i) => `${v.getDotPath(i) ?? '(body)'}: ${i.message}`).join('; ');

export function parseWith<S extends AnySchema>(schema: S, input: unknown): v.InferOutput<S> {
  const r = v.safeParse(schema, input);
  if (!r.success) throw validationError(issuesToDetails(r.issues));
  return r.output;
}

/**
 * The JSON request body; an empty body reads as `empty`, malformed JSON is 400, and so is text PostgreSQL cannot
 * store (NUL, unpaired surrogates), a number beyond a double, or nesting deeper than MAX_JSON_DEPTH (input.ts).
 */
export async function readJson(c: Context<AppEnv>, empty: unknown = {}): Promise<unknown> {
  const text = await readBodyText(c);
  if (text.trim() === '') return empty;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest('Malformed JSON body');
  }
  checkJsonValue(body);
  return body;
}

async function principalOf(c: Context<AppEnv>, mode: AuthMode): Promise<Principal | undefined> {
  if (mode === 'none' || mode === 'admin') return undefined;
  const header = c.req.header('authorization');
  if (mode === 'optional' && header === undefined) return undefined;
  const principal = await authenticateBearer(c.get('services'), header);
  checkCredentialKind(mode, principal);
  return principal;
}

export const sessionRequired = () => forbidden('This operation needs a session token', 'API keys and scoped tokens cannot perform it');
export const loginRequired = () =>
  forbidden('This operation needs a session token or a login JWT', 'API keys and JWTs scoped to one workspace cannot perform it');

/** Refuses (403) a credential of a kind the route does not take: `session` and `login` routes are a person's own. */
function checkCredentialKind(mode: AuthMode, principal: Principal | undefined): void {
  if (mode === 'session' && principal?.kind !== 'session') throw sessionRequired();
  if (mode === 'login' && !(principal && isInteractiveLogin(principal))) throw loginRequired();
}

/** The principal of an Authorization header (cached by token hash): 401 when it is missing, malformed or dead. */
export async function authenticateBearer(services: Services, header: string | undefined): Promise<Principal> {
  const token = bearerToken(header);
  const principal = await services.caches.principals.through(
    hashToken(token),
    (p) => [`user:${p.user.id}`],
    () => authenticate({ db: services.db, jwt: services.jwt, onUserCreated: acceptPendingInvitations }, token),
  );
  // A cached credential past its expiry is as dead as an uncached one.
  if (principal.expiresAt !== null && principal.expiresAt.getTime() <= Date.now()) throw unauthorized();
  return principal;
}

/**
 * Where the workspace of a call is named, as the transport saw it: the path id, `workspace_id` of the payload, or
 * the transport's own (X-Workspace-ID; the MCP session's workspace).
 */
export interface WorkspaceNaming {
  pathId?: string | undefined;
  payloadId?: unknown;
  /** For payload-scoped routes: where the id was looked for, in the error for a missing one. */
  payloadWhere?: string;
}

/** The workspace a call addresses, checked (400 when missing or not a UUID); undefined for routes outside one. */
function workspaceIdOf(route: AnyRoute, transport: Transport, naming: WorkspaceNaming): string | undefined {
  if (!route.workspace) return undefined;
  if (route.workspace === 'payload') {
    const given = naming.payloadId;
    const where = naming.payloadWhere ?? 'argument';
    if (given === undefined || given === null || given === '') throw badRequest(`Missing workspace_id (${where})`);
    if (typeof given !== 'string' || !isUuid(given)) throw badRequest(`workspace_id must be a UUID (${where})`);
    return given;
  }
  if (route.workspace === 'path' && naming.pathId !== undefined) return naming.pathId;
  return transport.workspaceId();
}

/** The workspace named by X-Workspace-ID: 400 when it is missing or not a UUID. */
export function checkWorkspaceHeader(header: string | undefined): string {
  if (header === undefined || header === '') throw badRequest('Missing X-Workspace-ID');
  if (!isUuid(header)) throw badRequest('X-Workspace-ID must be a UUID');
  return header;
}

/** The principal's access to a workspace (cached; 404 for an unknown or deleted one, 403 for a non-member). */
export async function workspaceAccess(
  services: Services,
  transport: Transport,
  principal: Principal,
  workspaceId: string,
): Promise<WorkspaceAccess> {
  const access = await cachedAccess(services, principal, workspaceId);
  transport.limitWorkspace(access.workspace.id);
  return access;
}

/** The principal's access to a workspace, from the access cache (invalidated with the workspace's `ws:<id>` topic). */
export function cachedAccess(services: Services, principal: Principal, workspaceId: string): Promise<WorkspaceAccess> {
  const who = { userId: principal.user.id, scopedWorkspaceId: principal.scopedWorkspaceId };
  return services.caches.access.through(`${who.userId}:${who.scopedWorkspaceId ?? ''}:${workspaceId}`, [`ws:${workspaceId}`], () =>
    resolveAccess(services.db, who, workspaceId),
  );
}

function staleTopic(route: AnyRoute, mutates: boolean, principal?: Principal, access?: WorkspaceAccess): string | undefined {
  if (!mutates) return undefined;
  const what = route.invalidates ?? (route.workspace ? 'workspace' : 'none');
  if (what === 'workspace' && access) return `ws:${access.workspace.id}`;
  if (what === 'user' && principal) return `user:${principal.user.id}`;
  return undefined;
}

/** A call of an operation as a transport presents it: who, which workspace, and the input not yet validated. */
export interface Call {
  principal: Principal | undefined;
  naming: WorkspaceNaming;
  /** The parameters of the route's path, checked (checkPathParams): the handler takes its ids as `Uuid`s. */
  params: Record<string, string>;
  /** Read once the caller's access is resolved, so a refusal never waits for a large body. */
  readBody(): Promise<unknown>;
  query: unknown;
}

/** The `:name`s of a Hono path, in order (what PathParams types). */
export const pathParamNames = (path: string): string[] => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);

/**
 * The call's path parameters with every one of the route's path: HTTP always has them all; an MCP call may leave
 * an argument out, and then an id names nothing (404, once the caller is authorized) and any other is empty.
 */
function allParams(route: AnyRoute, given: Record<string, string>): Record<string, string> {
  const missing = Object.fromEntries(pathParamNames(route.path).filter((name) => !(name in given)).map((name) => [name, '']));
  checkPathParams(missing);
  return { ...given, ...missing };
}

/** Whether an operation runs in one transaction with its audit entry: mutations, unless they manage their own. */
export const runsInTransaction = (route: AnyRoute): boolean => route.transaction ?? OPERATIONS[route.operation].mutates;

/** Raised (and rolled back) when a call's time ran out while its transaction ran: nothing of it commits. */
export const callAborted = () => new ServiceError('TIMEOUT', 'The call took longer than it may', 'nothing it did was kept');

/**
 * Runs one operation for any transport: resolve the workspace → authorize → validate → handle (+ audit, in the same
 * transaction for mutations) → publish what became stale. Authentication (which differs per transport) is done.
 */
export async function invoke(services: Services, route: AnyRoute, transport: Transport, call: Call): Promise<unknown> {
  const spec = OPERATIONS[route.operation];
  const { principal } = call;
  checkCredentialKind(route.auth, principal);
  const workspaceId = workspaceIdOf(route, transport, call.naming);
  let access: WorkspaceAccess | undefined;
  if (workspaceId !== undefined) {
    if (!principal) throw unauthorized();
    access = await workspaceAccess(services, transport, principal, workspaceId);
    if (route.role === 'admin' && access.role !== 'admin') throw forbidden('This operation needs the admin role');
  }
  const body = route.body ? parseWith(route.body, await call.readBody()) : undefined;
  const query = route.query ? parseWith(route.query, call.query) : undefined;
  const params = allParams(route, call.params);

  const inTransaction = runsInTransaction(route);
  const auditInfo: AuditInfo = {};
  const stale = staleTopic(route, spec.mutates, principal, access);
  const run = async (db: Db) => {
    const result = await route.handler({
      services,
      transport,
      db,
      // Present where the route's declaration says (HandlerCtx): invoke refused the call above otherwise.
      principal,
      access,
      body,
      query,
      params: params as PathParams<string>,
      requestId: transport.requestId,
      audit: (info) => Object.assign(auditInfo, info),
    });
    const failed = result instanceof Response && result.status >= 400;
    if (spec.mutates && !route.auditsItself && !failed) {
      const resultId = (result as { id?: unknown } | undefined)?.id;
      await recordAudit(db, {
        workspaceId: auditInfo.workspaceId ?? access?.workspace.id ?? null,
        userId: auditInfo.userId ?? principal?.user.id ?? null,
        apiKeyId: principal?.apiKeyId ?? null,
        action: auditInfo.action ?? route.operation,
        resourceType: spec.resource,
        resourceId: auditInfo.resourceId ?? (typeof resultId === 'string' ? resultId : null),
        details: auditInfo.details ?? {},
        requestId: transport.requestId,
        transport: transport.name,
      });
    }
    if (stale && !failed) {
      // Delivered to every process when this transaction commits.
      await notifyOnCommit(db, CHANNEL, stale);
    }
    // An abandoned call commits nothing: its transport has already answered with the timeout or the cancellation.
    if (inTransaction && !transport.beginCommit()) throw callAborted();
    return result;
  };
  const result = inTransaction ? await services.db.transaction().execute(run) : await run(services.db);
  if (stale) services.bus.invalidate(stale);
  return result;
}

/** The HTTP transport of one request (a class: one object per request rather than a closure per method). */
class HttpTransport implements Transport {
  readonly name = 'http';
  readonly requestId: string;
  /** The response headers the operation set, for a Response of its own (mount). */
  readonly headersSet: [string, string][] = [];

  constructor(private readonly c: Context<AppEnv>) {
    this.requestId = c.get('requestId');
  }

  // Made on first use: most operations never look, and each signal costs an AbortController.
  get signal(): AbortSignal {
    return this.c.req.raw.signal;
  }

  beginCommit(): boolean {
    return true;
  }

  remainingMs(): number | undefined {
    return undefined;
  }

  header(name: string): string | undefined {
    return this.c.req.header(name);
  }

  setHeader(name: string, value: string): void {
    this.headersSet.push([name, value]);
    this.c.header(name, value);
  }

  bodyStream(): Readable {
    return requestBodyStream(this.c);
  }

  workspaceId(): string {
    return checkWorkspaceHeader(this.c.req.header('x-workspace-id'));
  }

  limitWorkspace(id: string): void {
    limitWorkspace(this.c, id);
  }
}

export const httpTransport = (c: Context<AppEnv>): HttpTransport => new HttpTransport(c);

/** Registers a route: authenticate → read the body → invoke → render. */
export function mount(app: Hono<AppEnv>, route: AnyRoute): void {
  const objectBody = isObjectSchema(route.body);
  const readBody = async (c: Context<AppEnv>) => {
    // A body that is any JSON value (a workflow's $input) reads an empty body as null.
    const body = await readJson(c, objectBody ? {} : null);
    if (objectBody) requireObject(body);
    return body;
  };
  app.on(route.method.toUpperCase(), route.path, async (c) => {
    c.set('operation', route.operation);
    const services = c.get('services');
    if (route.auth === 'admin') checkAdminToken(services.adminToken, c.req.header('x-admin-token'));
    const principal = await principalOf(c, route.auth);
    if (principal) c.set('principal', principal);
    limitCaller(c, principal, { holdFailure: route.checksCredential === true });
    const params = c.req.param() as Record<string, string>;
    // Ids in the path are UUIDs and all text is storable before anything is looked up by it.
    checkRequestText(c, route.auth === 'optional' && !principal, params);
    const fromQuery = route.method === 'get' || route.method === 'delete';
    const header = c.req.header('x-workspace-id');
    if (route.workspace === 'path' && header !== undefined && header !== params.id) {
      throw badRequest('X-Workspace-ID does not match the workspace in the path');
    }
    // A payload-scoped route names its workspace in the body, so the body is read before access is resolved.
    const early = route.workspace === 'payload' && route.body && !fromQuery ? await readBody(c) : undefined;
    const transport = httpTransport(c);
    const naming: WorkspaceNaming = {
      pathId: route.workspace === 'path' ? (params.id ?? '') : undefined,
      payloadId: fromQuery ? c.req.query('workspace_id') : (early as { workspace_id?: unknown } | null | undefined)?.workspace_id,
      payloadWhere: fromQuery ? 'query parameter' : 'body field',
    };
    const result = await invoke(services, route, transport, {
      principal,
      naming,
      params,
      readBody: async () => early ?? (await readBody(c)),
      query: c.req.query(),
    });
    if (result instanceof Response) {
      // A Response of the handler's own does not carry the context's headers: copy those the operation set.
      for (const [name, value] of transport.headersSet) result.headers.set(name, value);
      return result;
    }
    const status = route.status ?? 200;
    if (status === 204) return c.body(null, 204);
    return c.json(result as object, status);
  });
}

/** Wrong method on a known path: 405 with an Allow header, in the one error envelope. */
export function mountMethodNotAllowed(app: Hono<AppEnv>, routes: readonly AnyRoute[]): void {
  const byPath = new Map<string, string[]>();
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r.method.toUpperCase()]);
  for (const [path, methods] of byPath) {
    app.all(path, (c) => {
      c.header('Allow', methods.join(', '));
      throw new ServiceError('METHOD_NOT_ALLOWED', `Method ${c.req.method} is not allowed here`, `Allowed: ${methods.join(', ')}`);
    });
  }
}
