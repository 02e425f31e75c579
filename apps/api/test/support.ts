import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JavascriptRuntime } from '@wds/stf-runtime';
import { createDatabase } from '@wds/testkit';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as v from 'valibot';
import { test as base, inject } from 'vitest';
import { createApp, routes } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openApiOf } from '../src/http/openapi.js';
import type { AnyRoute } from '../src/http/route.js';
import { createLogger } from '../src/logger.js';
import { type OpenedServices, openServices } from '../src/services-setup.js';
import type { Services } from '../src/services.js';
import { type RunningRealtime, startRealtime } from '../src/realtime.js';
import type { Server } from 'node:http';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const JWT_SECRET = 'test-jwt-secret-0123456789abcdefghijklmnop';

export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Call {
  token?: string | undefined;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  workspace?: string;
}

/** One migrated database and app per test file; tests isolate themselves with fresh users and workspaces. */
export class Harness {
  private counter = 0;
  constructor(
    readonly services: Services,
    readonly app: ReturnType<typeof createApp>,
    readonly url: string,
  ) {}

  /**
   * A fresh database (a copy of the run's migrated template, test/global-setup.ts), or (with `url`) another
   * process's view of an existing one.
   */
  static async create(env: Record<string, string> = {}, existingUrl?: string): Promise<Harness> {
    const url = existingUrl ?? (await createDatabase(inject('pgServerUrl'), { prefix: 'api', template: inject('apiTemplateDatabase') }));
    const configEnv = {
      ADMIN_TOKEN,
      AUTH_JWT_SECRET: JWT_SECRET,
      LOG_LEVEL: 'silent',
      SQL_STATEMENT_TIMEOUT_MS: '2000',
      SQL_MAX_ROWS: '500',
      STF_TIMEOUT_MS: '1500',
      EMBEDDER: 'hashing',
      JOB_POLL_INTERVAL_MS: '500',
      // Every in-process request comes from one (unknown) address, and the security suite fails auth on purpose.
      RATE_LIMIT_AUTH_FAILURES_PER_IP: '1000000',
      ...env,
    };
    // STORAGE_DIR shares a blob directory with another harness (a restarted process); it is then not removed.
    const blobDir = env.STORAGE_DIR ?? mkdtempSync(join(tmpdir(), 'wds-blobs-'));
    // The server's own assembly (services-setup.ts), on this database: one worker (unless STF_JS_WORKERS says), the job queue started on the
    // first enqueue (most test files never queue a job).
    const opened = await openServices(
      loadConfig({ ...configEnv, DATABASE_URL: url, DB_POOL_MAX: '5', STORAGE_DIR: blobDir, SECRETS_KEY: randomBytes(32).toString('base64') }),
      createLogger('silent'),
      { runJobs: true, startJobs: false, runtimes: { jsWorkers: Number(env.STF_JS_WORKERS ?? 1), prewarm: false } },
    );
    const services = opened.services;
    const h = new Harness(services, createApp(services), url);
    h.opened = opened;
    h.blobDir = blobDir;
    h.ownsBlobDir = env.STORAGE_DIR === undefined;
    return h;
  }

  /** The directory of this harness's filesystem blob store. */
  blobDir = '';
  private opened: OpenedServices | undefined;
  ownsBlobDir = true;

  private server: { close(cb: () => void): void; closeAllConnections?(): void } | undefined;
  private listening: Promise<string> | undefined;

  /** Serves the app on 127.0.0.1 (a real HTTP server, for clients that need a URL) with realtime (`/ws`), once; its base URL. */
  listen(): Promise<string> {
    this.listening ??= import('@hono/node-server').then(
      ({ serve }) =>
        new Promise((resolve, reject) => {
          const server = serve({ fetch: this.app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
            startRealtime(this.services, server as Server).then((r) => {
              this.realtime = r;
              resolve(`http://127.0.0.1:${info.port}`);
            }, reject);
          });
          this.server = server;
        }),
    );
    return this.listening;
  }

  /** The realtime hub of `listen()`'s server. */
  realtime: RunningRealtime | undefined;

  async close() {
    await this.realtime?.close();
    if (this.server) {
      const closed = new Promise<void>((resolve) => this.server?.close(() => resolve()));
      this.server.closeAllConnections?.();
      await closed;
    }
    if (this.ownsBlobDir) await rm(this.blobDir, { recursive: true, force: true }).catch(() => undefined);
    await this.opened?.close();
  }

  async call<T = any>(method: string, path: string, opts: Call = {}): Promise<Res<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    if (opts.workspace !== undefined) headers['x-workspace-id'] = opts.workspace;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const res = await this.app.request(path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    if (res.status >= 200 && res.status < 300) checkResponse(method, path, res, parsed);
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  uniqueEmail(tag = 'user'): string {
    return `${tag}.${process.pid}.${Date.now()}.${++this.counter}@example.test`;
  }

  /** A fresh user with a session token, through the admin interface. */
  async user(tag = 'user'): Promise<{ id: string; email: string; name: string; token: string }> {
    const email = this.uniqueEmail(tag);
    const u = await this.call('POST', '/admin/v1/users', {
      headers: { 'x-admin-token': ADMIN_TOKEN },
      body: { email, name: tag },
    });
    if (u.status !== 201) throw new Error(`user create: ${u.status} ${JSON.stringify(u.body)}`);
    const s = await this.call('POST', `/admin/v1/users/${u.body.id}/sessions`, {
      headers: { 'x-admin-token': ADMIN_TOKEN },
      body: {},
    });
    return { ...u.body, token: s.body.token };
  }

  async workspace(token: string, name = 'ws'): Promise<{ id: string; name: string }> {
    const r = await this.call('POST', '/api/v1/workspaces', { token, body: { name } });
    if (r.status !== 201) throw new Error(`workspace create: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** Adds an existing user to a workspace with a role. */
  async addMember(adminToken: string, workspaceId: string, email: string, role: 'admin' | 'member' = 'member') {
    const r = await this.call('POST', `/api/v1/workspaces/${workspaceId}/members`, {
      token: adminToken,
      body: { email, role },
    });
    if (r.status !== 201) throw new Error(`add member: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.membership as { id: string; user_id: string; role: string };
  }

  sql(token: string, workspaceId: string, sql: string) {
    return this.call('POST', `/api/v1/workspaces/${workspaceId}/sql`, { token, body: { sql } });
  }

  /** Runs SQL and fails the test unless it succeeds. */
  async sqlOk(token: string, workspaceId: string, sql: string) {
    const r = await this.sql(token, workspaceId, sql);
    if (r.status !== 200) throw new Error(`SQL failed: ${sql}\n${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  async group(token: string, workspaceId: string, body: { name?: string; user_ids?: string[]; stf_ids?: string[] }) {
    const r = await this.call('POST', '/api/v1/policy-groups', { token, workspace: workspaceId, body: { name: 'g', ...body } });
    if (r.status !== 201) throw new Error(`group: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id as string;
  }

  async policy(
    token: string,
    workspaceId: string,
    body: { policy_group_id: string; table_name: string; operation: string; mode?: string; condition?: unknown; name?: string },
  ) {
    const r = await this.call('POST', '/api/v1/policies', { token, workspace: workspaceId, body: { name: 'p', mode: 'allow', ...body } });
    if (r.status !== 201) throw new Error(`policy: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id as string;
  }

  /** Gives users unconditional allow policies for every operation on the tables. */
  async allowAll(token: string, workspaceId: string, userIds: string[], tables: string[]) {
    const g = await this.group(token, workspaceId, { name: 'all', user_ids: userIds });
    for (const table_name of tables) {
      for (const operation of ['select', 'insert', 'update', 'delete']) {
        await this.policy(token, workspaceId, { policy_group_id: g, table_name, operation });
      }
    }
    return g;
  }
}

/** The routes, each with its path as a pattern; static paths before those with parameters (a static one is preferred). */
const patterns = routes
  .map((r) => ({ route: r, pattern: new RegExp(`^${r.path.replace(/:[A-Za-z0-9_]+/g, '[^/]+')}$`), params: (r.path.match(/:/g) ?? []).length }))
  .sort((a, b) => a.params - b.params);

/**
 * The OpenAPI document's JSON Schema of each route's success body, compiled once (Ajv, draft 2020-12, with the
 * formats): what a generated client believes, checked against the same real answers as the valibot schema.
 */
let documentSchemas: { ajv: Ajv2020; byRoute: Map<string, ValidateFunction> } | undefined;
function documentSchemaOf(route: AnyRoute, status: number): ValidateFunction {
  if (!documentSchemas) {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(ajv);
    ajv.addSchema(openApiOf(routes), 'openapi');
    documentSchemas = { ajv, byRoute: new Map() };
  }
  const key = `${status} ${route.method} ${route.path}`;
  let validate = documentSchemas.byRoute.get(key);
  if (!validate) {
    const pointer = ['paths', route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}'), route.method, 'responses', String(status), 'content', 'application/json', 'schema']
      .map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1'))
      .join('/');
    validate = documentSchemas.ajv.compile({ $ref: `openapi#/${pointer}` });
    documentSchemas.byRoute.set(key, validate);
  }
  return validate;
}

/**
 * Contract check of every call: a 2xx JSON answer of a route that declares its `response` must match that schema,
 * and the JSON Schema the OpenAPI document states for it, or the test fails.
 */
function checkResponse(method: string, path: string, res: Response, body: unknown): void {
  if (!(res.headers.get('content-type') ?? '').startsWith('application/json')) return;
  const pathname = path.split('?')[0] ?? path;
  const m = method.toLowerCase();
  const found = patterns.find((d) => d.route.method === m && d.pattern.test(pathname))?.route;
  if (!found?.response) return;
  // Another success status than the route's (execute_sql's 202) is checked against what the document states for it.
  const declared = res.status === (found.status ?? 200);
  const r = declared ? v.safeParse(found.response, body) : { success: true as const };
  if (!r.success) {
    const issues = r.issues.map((i) => `${v.getDotPath(i) ?? '(body)'}: ${i.message}`).join('; ');
    throw new Error(`${method} ${pathname}: the ${res.status} answer does not match the declared response: ${issues}\n${short(body)}`);
  }
  const validate = documentSchemaOf(found, res.status);
  if (!validate(body)) {
    const issues = (validate.errors ?? []).map((e) => `${e.instancePath || '(body)'}: ${e.message}`).join('; ');
    throw new Error(`${method} ${pathname}: the ${res.status} answer does not match the OpenAPI document's schema: ${issues}\n${short(body)}`);
  }
}

/** Polls `check` until it is true (a change reaching another process), failing after `ms`; the time it took. */
export async function eventually(check: () => Promise<boolean>, ms = 3000): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    if (await check()) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`not within ${ms} ms`);
}

/** Polls `check` until it returns something other than undefined (background work), failing after `ms`. */
export async function until<T>(check: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The javascript runtime's queue statistics: STF runs in progress and waiting, per workspace and per principal. */
export const stfQueue = (h: Harness) => (h.services.runtimes.javascript as JavascriptRuntime).stats().queue;
/** Resolves once the javascript runtime's queue shows `check` (the harness has one worker unless STF_JS_WORKERS says). */
export const waitForStfQueue = (h: Harness, check: (q: ReturnType<typeof stfQueue>) => boolean, ms = 20_000) =>
  eventually(async () => check(stfQueue(h)), ms);

type User = Awaited<ReturnType<Harness['user']>>;

export const test = base.extend<{ harness: Harness; h: Harness; base: string; owner: User; ws: { id: string; name: string } }>({
  harness: [
    // biome-ignore lint/correctness/noEmptyPattern: vitest fixtures take a destructured context
    async ({}, use) => {
      const h = await Harness.create();
      await use(h);
      await h.close();
    },
    { scope: 'worker' },
  ],
  h: async ({ harness }, use) => use(harness),
  /** The base URL of the file's harness served over HTTP (`listen()`, once per file). */
  base: async ({ harness }, use) => use(await harness.listen()),
  owner: async ({ harness }, use) => use(await harness.user('owner')),
  ws: async ({ harness, owner }, use) => use(await harness.workspace(owner.token, 'Acme')),
});

/** Resolves when the process's invalidation bus drops `topic` (the message of a change made elsewhere). */
export function invalidation(process: Harness, topic: string): Promise<void> {
  return new Promise((resolve) => {
    const off = process.services.bus.subscribe((t) => {
      if (t !== topic) return;
      off();
      resolve();
    });
  });
}

/** A workspace id as physical names spell it (`ws_<id with _>_…`). */
export const underscored = (id: string) => id.toLowerCase().replace(/-/g, '_');
/** A workspace id as role names spell it (`wds_ws_<hex>`). */
export const hex = (id: string) => id.toLowerCase().replace(/-/g, '');
/** A value, shortened for a failure message. */
export const short = (v: unknown, n = 600) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > n ? `${s.slice(0, n)}…` : s;
};

export { expect, describe } from 'vitest';
