import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { CORS_ALLOW_HEADERS, parseCorsOrigins } from '../src/http/cors.js';
import type { Services } from '../src/services.js';
import { ADMIN_TOKEN, Harness } from './support.js';

const APP = 'https://app.example.com';
const DEV = 'http://localhost:5173';
const OTHER = 'https://evil.example.net';

let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string; name: string };

beforeAll(async () => {
  h = await Harness.create({ CORS_ORIGINS: `${APP}, ${DEV}/` });
  owner = await h.user('cors');
  ws = await h.workspace(owner.token, 'Cors');
});
afterAll(() => h?.close());

/** The same services under another CORS_ORIGINS (no second database). */
const appWith = (origins: string | undefined, services: Partial<Services> = {}) =>
  createApp({ ...h.services, ...services, config: { ...h.services.config, CORS_ORIGINS: parseCorsOrigins(origins ?? '') } });

const preflight = (app: ReturnType<typeof createApp>, path: string, origin: string, method = 'POST') =>
  app.request(path, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,x-workspace-id,content-type' },
  });

const cors = (res: Response) =>
  Object.fromEntries([...res.headers].filter(([k]) => k.startsWith('access-control-') || k === 'vary'));

describe('CORS_ORIGINS', () => {
  it('parses `*`, exact origins (normalized as browsers send them) and refuses anything else', () => {
    expect(loadConfig({}).CORS_ORIGINS).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' * ' }).CORS_ORIGINS).toBe('*');
    expect(loadConfig({ CORS_ORIGINS: 'https://App.Example.com:443/, http://127.0.0.1:3000' }).CORS_ORIGINS).toEqual([
      'https://app.example.com',
      'http://127.0.0.1:3000',
    ]);
    for (const bad of ['*, https://a.example', 'app.example.com', 'https://a.example/path', 'ftp://a.example', 'https://u:p@a.example', 'https://a.example?x', 'null']) {
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(/CORS_ORIGINS/);
    }
  });
});

describe('preflight', () => {
  it('an allowed origin gets 204 with the origin, methods, headers and max age, for any API path', async () => {
    for (const path of ['/api/v1/workspaces', `/api/v1/workspaces/${ws.id}/sql`, '/api/v1/audit-logs', '/mcp', '/api/v1/no-such-route']) {
      const res = await preflight(h.app, path, APP);
      expect(res.status, path).toBe(204);
      expect(await res.text()).toBe('');
      const got = cors(res);
      expect(got['access-control-allow-origin']).toBe(APP);
      expect(got.vary).toMatch(/\bOrigin\b/);
      expect(got['access-control-allow-methods']).toBe('GET, POST, PUT, PATCH, DELETE');
      for (const name of ['Authorization', 'X-Workspace-ID', 'Content-Type', 'Range', 'X-Request-Id', 'Prefer']) expect(got['access-control-allow-headers']).toContain(name);
      expect(got['access-control-max-age']).toBe('7200');
      expect(got['access-control-allow-credentials']).toBeUndefined();
    }
    // The second listed origin, configured with a trailing slash, matches what browsers send.
    expect((await preflight(h.app, '/api/v1/workspaces', DEV, 'GET')).headers.get('access-control-allow-origin')).toBe(DEV);
  });

  it('the admin header is not allowed to pages', () => {
    expect(CORS_ALLOW_HEADERS.toLowerCase()).not.toContain('x-admin-token');
  });

  it('needs no credentials and never touches the database', async () => {
    const untouchable = new Proxy({} as Services['db'], {
      get() {
        throw new Error('the database was used');
      },
    });
    const app = appWith(APP, { db: untouchable });
    const res = await preflight(app, `/api/v1/workspaces/${ws.id}/sql`, APP);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('an origin not listed gets no CORS header, and the OPTIONS request is routed as with CORS off', async () => {
    for (const origin of [OTHER, 'https://app.example.com.evil.net', 'http://app.example.com', 'null']) {
      const res = await preflight(h.app, '/api/v1/workspaces', origin);
      expect(res.status, origin).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, POST');
      const got = cors(res);
      expect(Object.keys(got).filter((k) => k.startsWith('access-control-')), origin).toEqual([]);
      expect(got.vary).toMatch(/\bOrigin\b/);
    }
    expect((await preflight(h.app, '/nowhere', OTHER)).status).toBe(404);
  });

  it('an OPTIONS request that is not a preflight is routed as before', async () => {
    const res = await h.app.request('/api/v1/workspaces', { method: 'OPTIONS', headers: { origin: APP } });
    expect(res.status).toBe(405);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
  });
});

describe('actual responses', () => {
  const call = (app: ReturnType<typeof createApp>, path: string, origin: string | undefined, init: RequestInit = {}) =>
    app.request(path, {
      ...init,
      headers: { authorization: `Bearer ${owner.token}`, ...(origin ? { origin } : {}), ...(init.headers as Record<string, string>) },
    });
  const EXPOSED = ['X-Request-Id', 'X-Workflow-Run-Id', 'Location', 'Preference-Applied', 'Content-Disposition', 'Content-Range', 'Accept-Ranges', 'Retry-After'];

  it('success and error responses carry the origin and the exposed headers', async () => {
    const ok = await call(h.app, `/api/v1/workspaces/${ws.id}/sql`, APP, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql: 'SELECT 1 AS one' }),
    });
    expect(ok.status).toBe(200);
    const unauthorized = await h.app.request('/api/v1/workspaces', { headers: { origin: APP, authorization: 'Bearer nope' } });
    expect(unauthorized.status).toBe(401);
    const missingWorkspace = await call(h.app, '/api/v1/audit-logs', APP);
    expect(missingWorkspace.status).toBe(400);
    const invalid = await call(h.app, '/api/v1/workspaces', APP, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name": 5}' });
    expect(invalid.status).toBe(400);
    const tooLarge = await call(h.app, '/api/v1/workspaces', APP, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(h.services.config.MAX_BODY_BYTES) }),
    });
    expect(tooLarge.status).toBe(413);
    const notFound = await call(h.app, '/api/v1/nowhere', APP);
    expect(notFound.status).toBe(404);
    const wrongMethod = await call(h.app, '/api/v1/workspaces', APP, { method: 'PUT' });
    expect(wrongMethod.status).toBe(405);
    for (const res of [ok, unauthorized, missingWorkspace, invalid, tooLarge, notFound, wrongMethod]) {
      expect(res.headers.get('access-control-allow-origin'), String(res.status)).toBe(APP);
      expect(res.headers.get('vary')).toMatch(/\bOrigin\b/);
      const exposed = res.headers.get('access-control-expose-headers') ?? '';
      for (const name of EXPOSED) expect(exposed, String(res.status)).toContain(name);
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('an unexpected failure (500) carries them too', async () => {
    const broken = new Proxy({} as Services['db'], {
      get() {
        throw new Error('boom');
      },
    });
    const app = appWith(APP, { db: broken });
    const res = await app.request('/api/v1/workspaces', { headers: { origin: APP, authorization: `Bearer ${owner.token}` } });
    expect(res.status).toBe(500);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('a streamed download (a Response of the handler) and its range answer carry them', async () => {
    const content = Buffer.from('hello, browser').toString('base64');
    const up = await call(h.app, `/api/v1/workspaces/${ws.id}/files`, APP, {
      method: 'POST',
      headers: { 'x-workspace-id': ws.id, 'content-type': 'application/json' },
      body: JSON.stringify({ filename: 'hello.txt', content_type: 'text/plain', content }),
    });
    expect(up.status).toBe(201);
    const id = ((await up.json()) as { id: string }).id;
    const whole = await call(h.app, `/api/v1/workspaces/${ws.id}/files/${id}/download`, APP, { headers: { 'x-workspace-id': ws.id } });
    expect(whole.status).toBe(200);
    expect(await whole.text()).toBe('hello, browser');
    const part = await call(h.app, `/api/v1/workspaces/${ws.id}/files/${id}/download`, APP, { headers: { 'x-workspace-id': ws.id, range: 'bytes=0-4' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('hello');
    for (const res of [whole, part]) {
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-expose-headers')).toContain('Content-Disposition');
      expect(res.headers.get('content-disposition')).toContain('hello.txt');
    }
    expect(part.headers.get('content-range')).toBe('bytes 0-4/14');
  });

  it('an origin not listed, or no Origin at all, gets no CORS header', async () => {
    for (const origin of [OTHER, undefined]) {
      const res = await call(h.app, '/api/v1/workspaces', origin);
      expect(res.status).toBe(200);
      expect([...res.headers.keys()].filter((k) => k.startsWith('access-control-'))).toEqual([]);
      expect(res.headers.get('vary')).toMatch(/\bOrigin\b/);
    }
  });
});

describe('`*`', () => {
  it('allows every origin with `*`, never with credentials, and needs no Vary', async () => {
    const app = appWith('*');
    const pre = await preflight(app, '/api/v1/workspaces', OTHER, 'GET');
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    expect(pre.headers.get('vary')).toBeNull();
    const res = await app.request('/api/v1/workspaces', { headers: { origin: OTHER, authorization: `Bearer ${owner.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')).toContain('X-Request-Id');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    // Without Origin (curl, servers) nothing changes.
    expect((await app.request('/healthz')).headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('off (the default)', () => {
  it('sends no CORS header and answers a preflight as any OPTIONS request: 405 on an API path, 404 elsewhere', async () => {
    const app = appWith(undefined);
    const pre = await preflight(app, '/api/v1/workspaces', APP);
    expect(pre.status).toBe(405);
    expect(pre.headers.get('allow')).toBe('GET, POST');
    expect((await preflight(app, '/nowhere', APP)).status).toBe(404);
    const res = await app.request('/api/v1/workspaces', { headers: { origin: APP, authorization: `Bearer ${owner.token}` } });
    expect(res.status).toBe(200);
    for (const r of [pre, res]) {
      expect([...r.headers.keys()].filter((k) => k.startsWith('access-control-'))).toEqual([]);
      expect(r.headers.get('vary')).toBeNull();
    }
    // The admin interface too.
    const admin = await app.request('/admin/v1/users', { method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': 'POST', 'x-admin-token': ADMIN_TOKEN } });
    expect(admin.status).toBe(405);
  });
});
