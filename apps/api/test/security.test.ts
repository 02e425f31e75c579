import { SignJWT } from 'jose';
import { routes } from '../src/app.js';
import { ADMIN_TOKEN, JWT_SECRET, describe, expect, test } from './support.js';

/**
 * The shared security suite: every route in the app's route list gets the common auth failures.
 * A route added later is covered automatically.
 */
const FAKE_ID = '01900000-0000-7000-8000-000000000000';

const concretePath = (path: string, wsId: string) =>
  path.replace(':id', wsId).replace(/:[A-Za-z]+/g, FAKE_ID);

const jwtFor = (sub: string, email: string, workspaceId?: string) =>
  new SignJWT({ email, email_verified: true, name: 'Jay', ...(workspaceId ? { workspace_id: workspaceId } : {}) })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(JWT_SECRET));

const userRoutes = routes.filter((r) => r.auth === 'user' || r.auth === 'session' || r.auth === 'login');

describe.each(userRoutes.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))('%s', (_name, route) => {
  // Payload-scoped routes (drive sync, SaaS proxy) name the workspace in the query (reads) or the body (writes).
  const inQuery = route.workspace === 'payload' && (route.method === 'get' || route.method === 'delete');
  const inBody = route.workspace === 'payload' && !inQuery;
  const send = (h: any, wsId: string, token: string | undefined, extra: Record<string, string> = {}) =>
    h.call(route.method.toUpperCase(), concretePath(route.path, wsId) + (inQuery ? `?workspace_id=${wsId}` : ''), {
      token,
      body: route.body ? (inBody ? { workspace_id: wsId } : {}) : undefined,
      headers: { ...(route.workspace === 'header' ? { 'x-workspace-id': wsId } : {}), ...extra },
    });

  test('no token → 401', async ({ h, ws }) => {
    const r = await send(h, ws.id, undefined);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  test('malformed and unknown tokens → 401', async ({ h, ws }) => {
    for (const bad of ['garbage', 'ses_doesnotexist', 'svc_doesnotexist', 'a.b.c']) {
      const r = await send(h, ws.id, bad);
      expect(r.status, bad).toBe(401);
    }
    const r = await h.call(route.method.toUpperCase(), concretePath(route.path, ws.id), {
      headers: { authorization: 'Basic Zm9vOmJhcg==' },
    });
    expect(r.status).toBe(401);
  });

  test('revoked API key → 401', async ({ h, ws, owner }) => {
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'k' } });
    await h.call('DELETE', `/api/v1/api-keys/${k.body.id}`, { token: owner.token });
    const r = await send(h, ws.id, k.body.key);
    expect(r.status).toBe(401);
  });

  test('expired session → 401', async ({ h, ws, owner }) => {
    const s = await h.call('POST', `/admin/v1/users/${owner.id}/sessions`, {
      headers: { 'x-admin-token': ADMIN_TOKEN },
      body: { expires_at: new Date(Date.now() - 1000).toISOString() },
    });
    const r = await send(h, ws.id, s.body.token);
    expect(r.status).toBe(401);
  });

  test('scoped JWT for another workspace → 403', async ({ h, ws, owner }) => {
    const other = await h.workspace(owner.token, 'other');
    const token = await jwtFor(`sub-${owner.id}`, owner.email, other.id);
    const r = await send(h, ws.id, token);
    if (route.auth === 'session' || route.auth === 'login' || route.workspace) {
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('FORBIDDEN');
    } else {
      expect(r.status).not.toBe(401);
    }
  });

  if (route.workspace) {
    test('non-member → 403 FORBIDDEN', async ({ h, ws }) => {
      const stranger = await h.user('stranger');
      const r = await send(h, ws.id, stranger.token);
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('FORBIDDEN');
    });

    test('unknown workspace → 404', async ({ h, owner }) => {
      const r = await send(h, FAKE_ID, owner.token);
      expect(r.status).toBe(404);
    });
  }

  if (route.role === 'admin') {
    test('member where admin is required → 403', async ({ h, ws, owner }) => {
      const m = await h.user('member');
      await h.addMember(owner.token, ws.id, m.email, 'member');
      const r = await send(h, ws.id, m.token);
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('FORBIDDEN');
    });
  }

  if (route.auth === 'session' || route.auth === 'login') {
    test('API key → 403 (session token or login JWT required)', async ({ h, ws, owner }) => {
      const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'k' } });
      const r = await send(h, ws.id, k.body.key);
      expect(r.status).toBe(403);
    });
  }

  if (route.auth === 'session') {
    test('unscoped JWT → 403 (session token required)', async ({ h, ws, owner }) => {
      const r = await send(h, ws.id, await jwtFor(`sub-${owner.id}`, owner.email));
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('FORBIDDEN');
    });
  }
});

const adminRoutes = routes.filter((r) => r.auth === 'admin');
describe.each(adminRoutes.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))('%s', (_name, route) => {
  test('without or with a wrong admin token → 401; a user token is not an admin token', async ({ h, owner }) => {
    const path = concretePath(route.path, FAKE_ID).replace(FAKE_ID, owner.id);
    for (const headers of [{}, { 'x-admin-token': 'wrong-token-wrong-token' }, { authorization: `Bearer ${owner.token}` }] as Record<string, string>[]) {
      const r = await h.call(route.method.toUpperCase(), path, { headers, body: {} });
      expect(r.status).toBe(401);
    }
  });
});

test('every route is listed in the OpenAPI document', async ({ h }) => {
  const r = await h.call('GET', '/api/v1/openapi.json');
  expect(r.status).toBe(200);
  for (const route of routes) {
    const p = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    expect(r.body.paths[p]?.[route.method], `${route.method} ${p}`).toBeDefined();
  }
});
