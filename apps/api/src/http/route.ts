import { OPERATIONS, type Operation, recordAudit } from '@wds/audit';
import { type Db, isUuid, sql } from '@wds/db';
import { ServiceError, badRequest, forbidden, unauthorized, validationError } from '@wds/errors';
import { CHANNEL } from '@wds/cache';
import { type Principal, authenticate, bearerToken, hashToken } from '@wds/identity';
import { type WorkspaceAccess, acceptPendingInvitations, resolveAccess } from '@wds/workspaces';
import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from './env.js';
import { checkAdminToken } from './admin-token.js';
import { checkJsonValue, checkRequestText, isObjectSchema, requireObject } from './input.js';
import { limitCaller, limitWorkspace } from './rate-limit.js';

type AnySchema = v.GenericSchema;

/**
 * Who may call a route:
 * - `user`: any valid Bearer credential; `session`: session tokens only;
 * - `optional`: Bearer if sent (must then be valid); `admin`: the X-Admin-Token header; `none`: anyone.
 */
export type AuthMode = 'none' | 'user' | 'session' | 'optional' | 'admin';
/**
 * Where the workspace comes from (spec §4.1): the path id, the X-Workspace-ID header, or `workspace_id` in the
 * payload — the query string of GET and DELETE, the JSON body of writes (drive sync, SaaS proxy).
 */
export type WorkspaceFrom = 'path' | 'header' | 'payload';

export interface AuditInfo {
  /** Overrides the route's operation name (e.g. execute_sql_select). */
  action?: string;
  resourceId?: string | null;
  details?: Record<string, unknown>;
  /** For routes outside a workspace that still concern one (e.g. workspace create). */
  workspaceId?: string | null;
}

export interface HandlerCtx<B, Q> {
  c: Context<AppEnv>;
  db: Db;
  principal: Principal;
  access: WorkspaceAccess;
  body: B;
  query: Q;
  params: Record<string, string>;
  requestId: string;
  /** Adds to the audit entry written (in the same transaction) for a mutating operation. */
  audit(info: AuditInfo): void;
}

export interface RouteDef<BS extends AnySchema | undefined, QS extends AnySchema | undefined> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Hono path syntax, e.g. `/api/v1/workspaces/:id/members`. */
  path: string;
  operation: Operation;
  summary: string;
  auth: AuthMode;
  workspace?: WorkspaceFrom;
  role?: 'member' | 'admin';
  body?: BS;
  query?: QS;
  /** Success status; 204 sends no body. */
  status?: 200 | 201 | 202 | 204;
  /** Mutating routes run in one transaction with their audit entry, unless they manage their own. */
  transaction?: boolean;
  /** The handler writes its own audit entry (inside its own transaction), so the wrapper does not. */
  auditsItself?: boolean;
  /**
   * Which cached state a successful mutation makes stale: the workspace's (access, policies, tables — the default
   * for workspace routes), the caller's credentials, or none (the handler invalidates itself).
   */
  invalidates?: 'workspace' | 'user' | 'none';
  handler: (
    ctx: HandlerCtx<BS extends AnySchema ? v.InferOutput<BS> : undefined, QS extends AnySchema ? v.InferOutput<QS> : undefined>,
  ) => Promise<unknown>;
}

export type AnyRoute = RouteDef<AnySchema | undefined, AnySchema | undefined>;

export const defineRoute = <BS extends AnySchema | undefined = undefined, QS extends AnySchema | undefined = undefined>(
  r: RouteDef<BS, QS>,
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
  const text = await c.req.text();
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
  const { services } = c.var;
  const token = bearerToken(header);
  const principal = await services.caches.principals.through(
    hashToken(token),
    (p) => [`user:${p.user.id}`],
    () => authenticate({ db: services.db, jwt: services.jwt, onUserCreated: acceptPendingInvitations }, token),
  );
  // A cached credential past its expiry is as dead as an uncached one.
  if (principal.expiresAt !== null && principal.expiresAt.getTime() <= Date.now()) throw unauthorized();
  if (mode === 'session' && principal.kind !== 'session') {
    throw forbidden('This operation needs a session token', 'API keys and scoped tokens cannot perform it');
  }
  return principal;
}

async function accessOf(c: Context<AppEnv>, route: AnyRoute, principal: Principal | undefined, body: unknown) {
  if (!route.workspace) return undefined;
  const header = c.req.header('x-workspace-id');
  let workspaceId: string;
  if (route.workspace === 'payload') {
    const fromQuery = route.method === 'get' || route.method === 'delete';
    const given = fromQuery ? c.req.query('workspace_id') : (body as { workspace_id?: unknown } | null | undefined)?.workspace_id;
    const where = fromQuery ? 'query parameter' : 'body field';
    if (given === undefined || given === null || given === '') throw badRequest(`Missing workspace_id (${where})`);
    if (typeof given !== 'string' || !isUuid(given)) throw badRequest(`workspace_id must be a UUID (${where})`);
    workspaceId = given;
  } else if (route.workspace === 'path') {
    workspaceId = c.req.param('id') ?? '';
    if (header !== undefined && header !== workspaceId) {
      throw badRequest('X-Workspace-ID does not match the workspace in the path');
    }
  } else {
    workspaceId = headerWorkspaceId(c);
  }
  if (!principal) throw unauthorized();
  const access = await workspaceAccess(c, principal, workspaceId);
  if (route.role === 'admin' && access.role !== 'admin') throw forbidden('This operation needs the admin role');
  return access;
}

/** The workspace named by X-Workspace-ID: 400 when it is missing or not a UUID. */
export function headerWorkspaceId(c: Context<AppEnv>): string {
  const header = c.req.header('x-workspace-id');
  if (header === undefined || header === '') throw badRequest('Missing X-Workspace-ID');
  if (!isUuid(header)) throw badRequest('X-Workspace-ID must be a UUID');
  return header;
}

/** The principal's access to a workspace (cached; 404 for an unknown or deleted one, 403 for a non-member). */
export async function workspaceAccess(c: Context<AppEnv>, principal: Principal, workspaceId: string): Promise<WorkspaceAccess> {
  const { services } = c.var;
  const who = { userId: principal.user.id, scopedWorkspaceId: principal.scopedWorkspaceId };
  const access = await services.caches.access.through(
    `${who.userId}:${who.scopedWorkspaceId ?? ''}:${workspaceId}`,
    [`ws:${workspaceId}`],
    () => resolveAccess(services.db, who, workspaceId),
  );
  limitWorkspace(c, access.workspace.id);
  return access;
}

function staleTopic(route: AnyRoute, mutates: boolean, principal?: Principal, access?: WorkspaceAccess): string | undefined {
  if (!mutates) return undefined;
  const what = route.invalidates ?? (route.workspace ? 'workspace' : 'none');
  if (what === 'workspace' && access) return `ws:${access.workspace.id}`;
  if (what === 'user' && principal) return `user:${principal.user.id}`;
  return undefined;
}

/** Registers a route: authenticate → resolve workspace → authorize → validate → handle (+ audit) → render. */
export function mount(app: Hono<AppEnv>, route: AnyRoute): void {
  const spec = OPERATIONS[route.operation];
  const inTransaction = route.transaction ?? spec.mutates;
  const objectBody = isObjectSchema(route.body);
  const readBody = async (c: Context<AppEnv>) => {
    const body = await readJson(c);
    if (objectBody) requireObject(body);
    return body;
  };
  app.on(route.method.toUpperCase(), route.path, async (c) => {
    const { services } = c.var;
    if (route.auth === 'admin') checkAdminToken(services.adminToken, c.req.header('x-admin-token'));
    const principal = await principalOf(c, route.auth);
    if (principal) c.set('principal', principal);
    limitCaller(c, principal);
    // Ids in the path are UUIDs and all text is storable before anything is looked up by it.
    checkRequestText(c, route.auth === 'optional' && !principal);
    // A payload-scoped route names its workspace in the body, so the body is read before access is resolved.
    const early = route.workspace === 'payload' && route.body ? await readBody(c) : undefined;
    const access = await accessOf(c, route, principal, early);
    if (access) c.set('access', access);
    const body = route.body ? parseWith(route.body, early ?? (await readBody(c))) : undefined;
    const query = route.query ? parseWith(route.query, c.req.query()) : undefined;

    const auditInfo: AuditInfo = {};
    const stale = staleTopic(route, spec.mutates, principal, access);
    const run = async (db: Db) => {
      const result = await route.handler({
        c,
        db,
        principal: principal as Principal,
        access: access as WorkspaceAccess,
        body,
        query,
        params: c.req.param() as Record<string, string>,
        requestId: c.var.requestId,
        audit: (info) => Object.assign(auditInfo, info),
      });
      if (spec.mutates && !route.auditsItself && !(result instanceof Response && result.status >= 400)) {
        const resultId = (result as { id?: unknown } | undefined)?.id;
        await recordAudit(db, {
          workspaceId: auditInfo.workspaceId ?? access?.workspace.id ?? null,
          userId: principal?.user.id ?? null,
          apiKeyId: principal?.apiKeyId ?? null,
          action: auditInfo.action ?? route.operation,
          resourceType: spec.resource,
          resourceId: auditInfo.resourceId ?? (typeof resultId === 'string' ? resultId : null),
          details: auditInfo.details ?? {},
          requestId: c.var.requestId,
        });
      }
      if (stale && !(result instanceof Response && result.status >= 400)) {
        // Delivered to every process when this transaction commits.
        await sql`SELECT pg_notify(${CHANNEL}, ${stale})`.execute(db);
      }
      return result;
    };
    const result = inTransaction ? await services.db.transaction().execute(run) : await run(services.db);
    if (stale) services.bus.invalidate(stale);

    if (result instanceof Response) return result;
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
