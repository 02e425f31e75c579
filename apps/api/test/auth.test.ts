import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll } from 'vitest';
import { ADMIN_TOKEN, Harness, JWT_SECRET, describe, expect, test } from './support.js';

const hs256 = (claims: Record<string, unknown>, sub: string, secret = JWT_SECRET) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime('5m').sign(new TextEncoder().encode(secret));

describe('GET /auth/me', () => {
  test('session token', async ({ h, owner }) => {
    const r = await h.call('GET', '/api/v1/auth/me', { token: owner.token });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: owner.id, email: owner.email, name: 'owner' });
  });

  test('a JWT for a new subject creates the user from its claims and applies invitations', async ({ h, owner, ws }) => {
    const email = h.uniqueEmail('jwt');
    await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body: { email, role: 'member' } });
    const token = await hs256({ email, name: 'Jwt User' }, `sub-${email}`);
    const me = await h.call('GET', '/api/v1/auth/me', { token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email, name: 'Jwt User' });
    const again = await h.call('GET', '/api/v1/auth/me', { token });
    expect(again.body.id).toBe(me.body.id);
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token })).status).toBe(200);
  });

  test('JWTs with a wrong signature, expired, or alg none are rejected', async ({ h }) => {
    const email = h.uniqueEmail('jwt');
    const wrong = await hs256({ email }, 's1', 'another-secret-another-secret-another');
    const expired = await new SignJWT({ email })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('s2')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(new TextEncoder().encode(JWT_SECRET));
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 's3', email })).toString('base64url')}.`;
    for (const token of [wrong, expired, none]) {
      expect((await h.call('GET', '/api/v1/auth/me', { token })).status).toBe(401);
    }
  });

  test('a scoped JWT reaches only its workspace', async ({ h, owner, ws }) => {
    const other = await h.workspace(owner.token, 'other');
    const token = await hs256({ email: owner.email, workspace_id: ws.id }, `sub-${owner.id}`);
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token })).status).toBe(200);
    expect((await h.call('GET', `/api/v1/workspaces/${other.id}`, { token })).status).toBe(403);
    const list = await h.call('GET', '/api/v1/workspaces', { token });
    expect(list.body.map((w: any) => w.id)).toEqual([ws.id]);
    expect((await h.call('POST', '/api/v1/workspaces', { token, body: { name: 'x' } })).status).toBe(403);
    expect((await h.call('GET', '/api/v1/api-keys', { token })).status).toBe(403);
  });
});

describe('JWTs verified against a JWKS', () => {
  let jwks: ReturnType<typeof createServer>;
  let h: Harness;
  let sign: (claims: Record<string, unknown>, sub: string) => Promise<string>;

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwks = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((ok) => jwks.listen(0, '127.0.0.1', ok));
    const port = (jwks.address() as AddressInfo).port;
    h = await Harness.create({ AUTH_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`, AUTH_JWT_SECRET: '' });
    sign = (claims, sub) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setSubject(sub).setExpirationTime('5m').sign(privateKey);
  });
  afterAll(async () => {
    await h.close();
    jwks.close();
  });

  test('a token signed by the JWKS key authenticates; an HS256 token does not', async () => {
    const email = h.uniqueEmail('jwks');
    const me = await h.call('GET', '/api/v1/auth/me', { token: await sign({ email, name: 'K' }, 'jwks-sub-1') });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(email);
    const hs = await hs256({ email }, 'jwks-sub-2');
    expect((await h.call('GET', '/api/v1/auth/me', { token: hs })).status).toBe(401);
  });
});

describe('POST /auth/token', () => {
  let upstream: ReturnType<typeof createServer>;
  let h: Harness;
  const received: URLSearchParams[] = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        received.push(form);
        res.setHeader('content-type', 'application/json');
        if (form.get('code') === 'bad') {
          res.statusCode = 400;
          res.end(JSON.stringify({ error: 'invalid_grant' }));
          return;
        }
        res.end(JSON.stringify({ access_token: 'a.b.c', refresh_token: 'r.s.t', token_type: 'Bearer', expires_in: 3600 }));
      });
    });
    await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok));
    const port = (upstream.address() as AddressInfo).port;
    h = await Harness.create({
      AUTH_TOKEN_URL: `http://127.0.0.1:${port}/oauth/token`,
      AUTH_CLIENT_ID: 'client-1',
      AUTH_CLIENT_SECRET: 'client-secret-1',
    });
  });
  afterAll(async () => {
    await h.close();
    upstream.close();
  });

  test('authorization_code is forwarded with the client credentials and passed through', async () => {
    const r = await h.call('POST', '/api/v1/auth/token', {
      body: { grant_type: 'authorization_code', code: 'c1', redirect_uri: 'https://app.example.com/cb' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ access_token: 'a.b.c', refresh_token: 'r.s.t', token_type: 'Bearer', expires_in: 3600 });
    const sent = received.at(-1)!;
    expect(Object.fromEntries(sent)).toEqual({
      grant_type: 'authorization_code',
      code: 'c1',
      redirect_uri: 'https://app.example.com/cb',
      client_id: 'client-1',
      client_secret: 'client-secret-1',
    });
  });

  test('refresh_token is forwarded', async () => {
    const r = await h.call('POST', '/api/v1/auth/token', { body: { grant_type: 'refresh_token', refresh_token: 'r1' } });
    expect(r.status).toBe(200);
    expect(received.at(-1)!.get('refresh_token')).toBe('r1');
  });

  test('client credentials from the caller cannot override the configured ones', async () => {
    await h.call('POST', '/api/v1/auth/token', {
      body: { grant_type: 'refresh_token', refresh_token: 'r1', client_id: 'evil', client_secret: 'evil' },
    });
    expect(received.at(-1)!.get('client_id')).toBe('client-1');
    expect(received.at(-1)!.getAll('client_secret')).toEqual(['client-secret-1']);
  });

  test('OAuth errors pass through in their own form', async () => {
    const r = await h.call('POST', '/api/v1/auth/token', {
      body: { grant_type: 'authorization_code', code: 'bad', redirect_uri: 'https://app.example.com/cb' },
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'invalid_grant' });
  });

  test('client_credentials and unknown grants are rejected without calling upstream', async () => {
    const before = received.length;
    for (const grant_type of ['client_credentials', 'password', '']) {
      const r = await h.call('POST', '/api/v1/auth/token', { body: { grant_type } });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('unsupported_grant_type');
    }
    const http = await h.call('POST', '/api/v1/auth/token', {
      body: { grant_type: 'authorization_code', code: 'c', redirect_uri: 'http://app.example.com/cb' },
    });
    expect(http.status).toBe(400);
    expect(received.length).toBe(before);
  });

  test('without AUTH_TOKEN_URL the endpoint says it is not configured', async ({ h: plain }) => {
    const r = await plain.call('POST', '/api/v1/auth/token', { body: { grant_type: 'refresh_token', refresh_token: 'x' } });
    expect(r.status).toBe(503);
  });
});

describe('admin interface', () => {
  test('creates users (409 on a duplicate email) and sessions (404 for unknown users)', async ({ h }) => {
    const email = h.uniqueEmail('adm');
    const headers = { 'x-admin-token': ADMIN_TOKEN };
    const u = await h.call('POST', '/admin/v1/users', { headers, body: { email, name: 'A' } });
    expect(u.status).toBe(201);
    expect(u.body).toEqual({ id: u.body.id, email, name: 'A' });
    expect((await h.call('POST', '/admin/v1/users', { headers, body: { email: email.toUpperCase(), name: 'B' } })).status).toBe(409);
    expect((await h.call('POST', '/admin/v1/users', { headers, body: { email: 'nope', name: 'B' } })).status).toBe(400);
    const s = await h.call('POST', `/admin/v1/users/${u.body.id}/sessions`, { headers, body: {} });
    expect(s.status).toBe(201);
    expect(s.body.token).toMatch(/^ses_/);
    expect(new Date(s.body.expires_at).getTime()).toBeGreaterThan(Date.now());
    expect((await h.call('POST', '/admin/v1/users/01900000-0000-7000-8000-000000000000/sessions', { headers, body: {} })).status).toBe(404);
  });
});
