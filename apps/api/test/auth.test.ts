import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll } from 'vitest';
import { ADMIN_TOKEN, Harness, JWT_SECRET, describe, expect, test } from './support.js';

const ISSUER = 'https://id.example.test';

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
    const token = await hs256({ email, email_verified: true, name: 'Jwt User' }, `sub-${email}`);
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
    const token = await hs256({ email: owner.email, email_verified: true, workspace_id: ws.id }, `sub-${owner.id}`);
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token })).status).toBe(200);
    expect((await h.call('GET', `/api/v1/workspaces/${other.id}`, { token })).status).toBe(403);
    const list = await h.call('GET', '/api/v1/workspaces', { token });
    expect(list.body.map((w: any) => w.id)).toEqual([ws.id]);
    expect((await h.call('POST', '/api/v1/workspaces', { token, body: { name: 'x' } })).status).toBe(403);
    expect((await h.call('GET', '/api/v1/api-keys', { token })).status).toBe(403);
  });
});

/** The audit entries of how JWT subjects became (or did not become) a user. */
const linkings = (h: Harness, userId: string) =>
  h.services.db
    .selectFrom('platform.audit_logs')
    .select(['user_id', 'resource_id', 'details'])
    .where('action', '=', 'link_jwt_identity')
    .where('user_id', '=', userId)
    .orderBy('id')
    .execute()
    .then((rows) => rows.map((r) => r.details as Record<string, unknown>));

const jwtSubjectOf = async (h: Harness, userId: string) =>
  (await h.services.db.selectFrom('platform.users').select('jwt_subject').where('id', '=', userId).executeTakeFirstOrThrow()).jwt_subject;

describe('JWT subjects become users only through a verified email (issue 28)', () => {
  test('an unverified email never links a new subject to the user of that email, nor creates one', async ({ h, owner, ws }) => {
    for (const [i, verified] of [undefined, false, 'false', 1, 'yes', null].entries()) {
      const claims = { email: owner.email, name: 'Mallory', ...(verified === undefined ? {} : { email_verified: verified }) };
      const r = await h.call('GET', '/api/v1/auth/me', { token: await hs256(claims, `attacker-${owner.id}-${i}`) });
      expect([r.status, r.body.code]).toEqual([401, 'UNAUTHORIZED']);
      // Nor under another spelling of the same email.
      const upper = await hs256({ ...claims, email: owner.email.toUpperCase() }, `attacker-up-${owner.id}-${i}`);
      expect((await h.call('GET', '/api/v1/auth/me', { token: upper })).status).toBe(401);
    }
    expect(await jwtSubjectOf(h, owner.id)).toBeNull();
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: owner.token })).status).toBe(200);
    // Every attempt on the account is in its audit trail.
    const refused = await linkings(h, owner.id);
    expect(refused).toHaveLength(12);
    expect(refused.every((d) => d.outcome === 'refused' && d.reason === 'the email is not verified')).toBe(true);

    // The owner's own subject, with the email verified, links the account: the same user, and audited.
    const own = await hs256({ email: owner.email, email_verified: true }, `owner-${owner.id}`);
    const me = await h.call('GET', '/api/v1/auth/me', { token: own });
    expect([me.status, me.body.id]).toEqual([200, owner.id]);
    expect(await jwtSubjectOf(h, owner.id)).toBe(`owner-${owner.id}`);
    expect((await linkings(h, owner.id)).at(-1)).toMatchObject({ outcome: 'linked', subject: `owner-${owner.id}`, email: owner.email });

    // An unverified email for no user at all creates nobody and takes no invitation.
    const invited = h.uniqueEmail('invited');
    await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body: { email: invited, role: 'member' } });
    const squat = await hs256({ email: invited, email_verified: false }, `squat-${invited}`);
    expect((await h.call('GET', '/api/v1/auth/me', { token: squat })).status).toBe(401);
    const users = await h.services.db.selectFrom('platform.users').select('id').where('email', '=', invited).execute();
    expect(users).toEqual([]);
    const pending = await h.call('GET', `/api/v1/workspaces/${ws.id}/invitations`, { token: owner.token });
    expect(pending.body.map((i: any) => i.email)).toContain(invited);
  });

  test('a link, once made, is never replaced: another subject with the same verified email is refused', async ({ h }) => {
    const user = await h.user('linked');
    const first = await hs256({ email: user.email, email_verified: true }, `first-${user.id}`);
    expect((await h.call('GET', '/api/v1/auth/me', { token: first })).body.id).toBe(user.id);
    for (const email of [user.email, user.email.toUpperCase(), user.email]) {
      const second = await hs256({ email, email_verified: true }, `second-${user.id}-${email}`);
      const r = await h.call('GET', '/api/v1/auth/me', { token: second });
      expect([r.status, r.body.code]).toEqual([401, 'UNAUTHORIZED']);
    }
    expect(await jwtSubjectOf(h, user.id)).toBe(`first-${user.id}`);
    expect((await h.call('GET', '/api/v1/auth/me', { token: first })).body.id).toBe(user.id);
    // Audited once per subject: a refused token is refused again on every request, without a new entry each time.
    expect((await linkings(h, user.id)).map((d) => d.outcome)).toEqual(['linked', 'refused', 'refused']);
  });

  test('two new subjects racing for one verified email: one gets the account, the other is refused', async ({ h }) => {
    const user = await h.user('race');
    const tokens = await Promise.all(Array.from({ length: 6 }, (_, i) => hs256({ email: user.email, email_verified: true }, `race-${user.id}-${i}`)));
    const answers = await Promise.all(tokens.map((token) => h.call('GET', '/api/v1/auth/me', { token })));
    expect(answers.filter((r) => r.status === 200).map((r) => r.body.id)).toEqual([user.id]);
    expect(answers.filter((r) => r.status === 401)).toHaveLength(5);
    const winner = answers.findIndex((r) => r.status === 200);
    expect(await jwtSubjectOf(h, user.id)).toBe(`race-${user.id}-${winner}`);
  });

  test('an email claim that is not a plain ASCII address never reaches or makes a user', async ({ h }) => {
    const user = await h.user('unicode');
    const [local, domain] = user.email.split('@') as [string, string];
    const lookalikes = [
      `${user.email} `,
      ` ${user.email}`,
      `${local}@${domain.replace('e', '\u0435')}`, // Cyrillic е
      `${local}\u200b@${domain}`, // zero-width space
      `${local}@${domain}`.replace('a', '\uff41'), // fullwidth a
      `${local}@${domain}`.normalize('NFD').replace('e', 'e\u0301'), // combining accent
      'not-an-email',
    ];
    for (const [i, email] of lookalikes.entries()) {
      const token = await hs256({ email, email_verified: true }, `lookalike-${user.id}-${i}`);
      expect((await h.call('GET', '/api/v1/auth/me', { token })).status).toBe(401);
    }
    expect(await jwtSubjectOf(h, user.id)).toBeNull();
    const made = await h.services.db.selectFrom('platform.users').select('id').where('jwt_subject', 'like', `lookalike-${user.id}-%`).execute();
    expect(made).toEqual([]);
  });
});

describe('JWTs with a configured issuer', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.create({ AUTH_JWT_ISSUER: ISSUER });
  });
  afterAll(() => h.close());

  test('a token of another issuer, or of none, is refused even when signed with the key', async () => {
    const user = await h.user('issuer');
    const signed = (iss: string | undefined, sub: string) => {
      const jwt = new SignJWT({ email: user.email, email_verified: true }).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime('5m');
      return (iss === undefined ? jwt : jwt.setIssuer(iss)).sign(new TextEncoder().encode(JWT_SECRET));
    };
    for (const iss of ['https://evil.example', `${ISSUER}/`, undefined]) {
      expect((await h.call('GET', '/api/v1/auth/me', { token: await signed(iss, `other-${iss}`) })).status).toBe(401);
    }
    expect(await jwtSubjectOf(h, user.id)).toBeNull();
    const me = await h.call('GET', '/api/v1/auth/me', { token: await signed(ISSUER, `own-${user.id}`) });
    expect([me.status, me.body.id]).toEqual([200, user.id]);
    expect((await linkings(h, user.id)).at(-1)).toMatchObject({ outcome: 'linked', issuer: ISSUER });
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
    h = await Harness.create({ AUTH_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`, AUTH_JWT_ISSUER: ISSUER, AUTH_JWT_SECRET: '' });
    sign = (claims, sub) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(ISSUER)
        .setSubject(sub)
        .setExpirationTime('5m')
        .sign(privateKey);
  });
  afterAll(async () => {
    await h.close();
    jwks.close();
  });

  test('a token signed by the JWKS key authenticates; an HS256 token does not', async () => {
    const email = h.uniqueEmail('jwks');
    const me = await h.call('GET', '/api/v1/auth/me', { token: await sign({ email, email_verified: true, name: 'K' }, 'jwks-sub-1') });
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

/**
 * A fake authorization server on 127.0.0.1 doing the authorization-code flow with PKCE (RFC 7636, S256): its
 * authorization endpoint redirects to the registered URI with a code bound to the challenge; its token endpoint
 * issues an access token (an HS256 JWT the service accepts) only to the code's verifier and redirect URI.
 */
function fakeAuthorizationServer(registered: string, clientSecret: string) {
  const codes = new Map<string, { challenge: string; redirectUri: string; sub: string; email: string }>();
  const tokenRequests: URLSearchParams[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const q = url.searchParams;
      if (q.get('redirect_uri') !== registered || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return json(400, { error: 'invalid_request' });
      const code = `code-${codes.size + 1}`;
      codes.set(code, { challenge: q.get('code_challenge') as string, redirectUri: registered, sub: q.get('login_hint_sub') as string, email: q.get('login_hint') as string });
      res.writeHead(302, { location: `${registered}?code=${code}&state=${q.get('state')}` });
      return res.end();
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const form = new URLSearchParams(body);
      tokenRequests.push(form);
      const grant = codes.get(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      const s256 = createHash('sha256').update(verifier).digest('base64url');
      if (form.get('client_secret') !== clientSecret) return json(401, { error: 'invalid_client' });
      if (!grant || grant.challenge !== s256 || grant.redirectUri !== form.get('redirect_uri')) return json(400, { error: 'invalid_grant' });
      codes.delete(form.get('code') as string);
      const accessToken = await hs256({ email: grant.email, email_verified: true, name: 'Browser User' }, grant.sub);
      json(200, { access_token: accessToken, refresh_token: 'refresh-1', token_type: 'Bearer', expires_in: 300 });
    });
  });
  return { server, tokenRequests };
}

describe('browser sign-in with PKCE through the token exchange (issue 31)', () => {
  const CONSOLE = 'https://console.example.test';
  const REDIRECT = `${CONSOLE}/console/callback`;
  let fake: ReturnType<typeof fakeAuthorizationServer>;
  let as: string;
  let h: Harness;

  beforeAll(async () => {
    fake = fakeAuthorizationServer(REDIRECT, 'console-secret');
    await new Promise<void>((ok) => fake.server.listen(0, '127.0.0.1', ok));
    as = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    h = await Harness.create({
      AUTH_TOKEN_URL: `${as}/token`,
      AUTH_CLIENT_ID: 'console',
      AUTH_CLIENT_SECRET: 'console-secret',
      CORS_ORIGINS: CONSOLE,
    });
  });
  afterAll(async () => {
    await h.close();
    fake.server.close();
  });

  test('a page on the console origin signs in: verifier forwarded, token passed back, and the JWT creates a workspace', async () => {
    const email = h.uniqueEmail('browser');
    // What the page does before leaving: a verifier, its S256 challenge, a state.
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const authorize = new URL(`${as}/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id: 'console', redirect_uri: REDIRECT, state: 'st-1', code_challenge: challenge, code_challenge_method: 'S256', login_hint: email, login_hint_sub: `browser-${email}` })) {
      authorize.searchParams.set(k, v);
    }
    const back = await fetch(authorize, { redirect: 'manual' });
    const landed = new URL(back.headers.get('location') as string);
    expect(`${landed.origin}${landed.pathname}`).toBe(REDIRECT);
    expect(landed.searchParams.get('state')).toBe('st-1');
    const code = landed.searchParams.get('code') as string;

    // The exchange from the console's origin: the preflight a JSON POST needs, then the call.
    const origin = { origin: CONSOLE };
    const preflight = await h.call('OPTIONS', '/api/v1/auth/token', {
      headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(CONSOLE);
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');

    // The wrong verifier (an intercepted code without it) gets the server's own refusal.
    const stolen = await h.call('POST', '/api/v1/auth/token', {
      headers: origin,
      body: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: randomBytes(32).toString('base64url') },
    });
    expect([stolen.status, stolen.body]).toEqual([400, { error: 'invalid_grant' }]);
    expect(stolen.headers.get('access-control-allow-origin')).toBe(CONSOLE);

    const issue = async () => {
      // The fake spends a code only on success: a fresh one for the real exchange.
      const again = await fetch(authorize, { redirect: 'manual' });
      return new URL(again.headers.get('location') as string).searchParams.get('code') as string;
    };
    const exchanged = await h.call('POST', '/api/v1/auth/token', {
      headers: origin,
      body: { grant_type: 'authorization_code', code: await issue(), redirect_uri: REDIRECT, code_verifier: verifier, client_secret: 'page-guess' },
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers.get('access-control-allow-origin')).toBe(CONSOLE);
    expect(exchanged.headers.get('cache-control')).toBe('no-store');
    const sent = fake.tokenRequests.at(-1) as URLSearchParams;
    expect(sent.get('code_verifier')).toBe(verifier);
    expect(sent.getAll('client_secret')).toEqual(['console-secret']);
    expect(sent.get('client_id')).toBe('console');

    // The access token is the person's login: it names them and may create a workspace (unscoped).
    const token = exchanged.body.access_token as string;
    const me = await h.call('GET', '/api/v1/auth/me', { token, headers: origin });
    expect([me.status, me.body.email]).toEqual([200, email]);
    const ws = await h.call('POST', '/api/v1/workspaces', { token, headers: origin, body: { name: 'from the browser' } });
    expect(ws.status).toBe(201);
    expect(ws.headers.get('access-control-allow-origin')).toBe(CONSOLE);
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
