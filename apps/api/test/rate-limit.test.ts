import { type ServerType, serve } from '@hono/node-server';
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { SignJWT } from 'jose';
import WebSocket from 'ws';
import { createApp } from '../src/app.js';
import { type Config, loadConfig } from '../src/config.js';
import { RateLimits } from '../src/http/rate-limit.js';
import { startRealtime } from '../src/realtime.js';
import { ADMIN_TOKEN, type Call, type Harness, JWT_SECRET, type Res, describe, expect, test } from './support.js';

type Limits = Partial<
  Pick<Config, 'RATE_LIMIT_PER_PRINCIPAL' | 'RATE_LIMIT_PER_WORKSPACE' | 'RATE_LIMIT_AUTH_FAILURES_PER_IP' | 'RATE_LIMIT_MAX_KEYS' | 'TRUST_PROXY'>
>;
const OFF = { RATE_LIMIT_PER_PRINCIPAL: 0, RATE_LIMIT_PER_WORKSPACE: 0, RATE_LIMIT_AUTH_FAILURES_PER_IP: 0 };

/**
 * Another app over the harness's services with its own limits and a clock moved by hand; `from` is the socket's
 * remote address (in-process requests have none otherwise).
 */
function limited(h: Harness, limits: Limits) {
  let now = 0;
  const config = { ...h.services.config, ...OFF, ...limits };
  const app = createApp({ ...h.services, config, rateLimits: new RateLimits(config, () => now) });
  const call = async (method: string, path: string, opts: Call & { from?: string } = {}): Promise<Res> => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const env = { incoming: { socket: { remoteAddress: opts.from ?? '192.0.2.1', remotePort: 40000, remoteFamily: 'IPv4' } } };
    const res = await app.request(path, { method, headers, body }, env);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
  return { call, advance: (ms: number) => (now += ms) };
}

const rateHeaders = (r: Res) => ({
  limit: r.headers.get('ratelimit-limit'),
  remaining: r.headers.get('ratelimit-remaining'),
  reset: r.headers.get('ratelimit-reset'),
  policy: r.headers.get('ratelimit-policy'),
  retryAfter: r.headers.get('retry-after'),
});

async function apiKey(h: Harness, sessionToken: string): Promise<string> {
  const r = await h.call('POST', '/api/v1/api-keys', { token: sessionToken, body: { name: 'agent' } });
  expect(r.status).toBe(201);
  return r.body.key;
}

describe('failed authentication per client address', () => {
  test('with the defaults, 300 bad tokens from one address: 60 get 401, the rest 429 with Retry-After', async ({ h, owner }) => {
    const defaults = loadConfig({});
    expect(defaults.RATE_LIMIT_AUTH_FAILURES_PER_IP).toBe(60);
    const { call, advance } = limited(h, {
      RATE_LIMIT_PER_PRINCIPAL: defaults.RATE_LIMIT_PER_PRINCIPAL,
      RATE_LIMIT_PER_WORKSPACE: defaults.RATE_LIMIT_PER_WORKSPACE,
      RATE_LIMIT_AUTH_FAILURES_PER_IP: defaults.RATE_LIMIT_AUTH_FAILURES_PER_IP,
    });
    const from = '203.0.113.7';
    const answers: Res[] = [];
    for (let i = 0; i < 300; i++) answers.push(await call('GET', '/api/v1/auth/me', { token: `svc_guess${i}`, from }));
    expect(answers.slice(0, 60).map((r) => r.status)).toEqual(Array(60).fill(401));
    expect(answers.slice(60).map((r) => r.status)).toEqual(Array(240).fill(429));
    // The 401s show the address's budget running down.
    expect(answers.slice(0, 60).map((r) => Number(r.headers.get('ratelimit-remaining')))).toEqual(Array.from({ length: 60 }, (_, i) => 59 - i));
    expect(rateHeaders(answers[0]!)).toMatchObject({ limit: '60', policy: '60;w=60', retryAfter: null });
    const refused = answers[60]!;
    expect(refused.body).toEqual({
      error: 'Too many failed authentication attempts from this address',
      code: 'TOO_MANY_REQUESTS',
      details: expect.stringContaining('RATE_LIMIT_AUTH_FAILURES_PER_IP'),
    });
    expect(rateHeaders(refused)).toMatchObject({ limit: '60', remaining: '0', retryAfter: '1' });

    // A valid credential from that address still gets through (issue 28): the budget slows guessing, nothing else.
    expect((await call('GET', '/api/v1/auth/me', { token: owner.token, from })).status).toBe(200);
    // Another address is not affected; health probes never are.
    expect((await call('GET', '/api/v1/auth/me', { token: owner.token, from: '198.51.100.4' })).status).toBe(200);
    expect((await call('GET', '/api/v1/auth/me', { token: 'svc_guess', from: '198.51.100.4' })).status).toBe(401);
    const health = await call('GET', '/healthz', { from });
    expect(health.status).toBe(200);
    expect(health.headers.get('ratelimit-limit')).toBeNull();

    // One more attempt per second after that, and a full budget after a quiet minute.
    advance(1000);
    expect((await call('GET', '/api/v1/auth/me', { token: 'svc_again', from })).status).toBe(401);
    expect((await call('GET', '/api/v1/auth/me', { token: 'svc_again', from })).status).toBe(429);
    advance(60_000);
    const fresh = await call('GET', '/api/v1/auth/me', { token: 'svc_again', from });
    expect(fresh.status).toBe(401);
    expect(rateHeaders(fresh)).toMatchObject({ limit: '60', remaining: '59' });
  });

  test('past the budget, credentials no one can guess are still checked: the valid get through, the rest 429 (issue 28)', async ({ h, owner }) => {
    const { call } = limited(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 3 });
    const from = '198.51.100.200';
    for (let i = 0; i < 3; i++) expect((await call('GET', '/api/v1/auth/me', { token: `ses_guess${i}`, from })).status).toBe(401);
    // Someone else behind the same address (an office's NAT) with credentials never used before, so never cached.
    const fresh = await h.call('POST', `/admin/v1/users/${owner.id}/sessions`, { headers: { 'x-admin-token': ADMIN_TOKEN }, body: {} });
    const key = await apiKey(h, owner.token);
    const jwt = await new SignJWT({ email: owner.email, email_verified: true })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(`nat-${owner.id}`)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JWT_SECRET));
    for (const token of [fresh.body.token, key, jwt, owner.token]) {
      const r = await call('GET', '/api/v1/auth/me', { token, from });
      expect([r.status, r.body.id]).toEqual([200, owner.id]);
    }
    // Public routes need no credential and answer as ever.
    expect((await call('GET', '/api/v1/openapi.json', { from })).status).toBe(200);
    // Wrong ones are still refused, as 429 with Retry-After, and never reach a 401's worth of information.
    for (const token of ['ses_guess', 'svc_guess', 'a.b.c']) {
      const r = await call('GET', '/api/v1/auth/me', { token, from });
      expect([r.status, r.body.code, r.headers.get('retry-after')]).toEqual([429, 'TOO_MANY_REQUESTS', expect.any(String)]);
      expect(r.body.details).toMatch(/RATE_LIMIT_AUTH_FAILURES_PER_IP/);
    }
    expect((await call('GET', '/api/v1/auth/me', { from })).status).toBe(429);
    // A secret an operator chose is not even compared while the budget is spent: the right one is refused too.
    const admin = await call('POST', `/admin/v1/users/${owner.id}/sessions`, { from, headers: { 'x-admin-token': ADMIN_TOKEN }, body: {} });
    expect(admin.status).toBe(429);
  });

  test('parallel guesses cannot overrun the budget: each holds a unit while its token is checked', async ({ h }) => {
    const { call } = limited(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 5 });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => call('GET', '/api/v1/auth/me', { token: `svc_parallel${i}` })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(45);
  });

  test('over a real socket, the client address is the socket peer', async ({ h }) => {
    let now = 0;
    const config = { ...h.services.config, ...OFF, RATE_LIMIT_AUTH_FAILURES_PER_IP: 2 };
    const app = createApp({ ...h.services, config, rateLimits: new RateLimits(config, () => now) });
    const server = await new Promise<ServerType>((ok) => {
      const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => ok(s));
    });
    try {
      const { port } = server.address() as AddressInfo;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/auth/me`, { headers: { authorization: `Bearer svc_socket${i}` } });
        await res.text();
        statuses.push(res.status);
        if (i === 2) expect(res.headers.get('retry-after')).toBe('30');
      }
      expect(statuses).toEqual([401, 401, 429]);
      now += 30_000;
      const again = await fetch(`http://127.0.0.1:${port}/api/v1/auth/me`, { headers: { authorization: 'Bearer svc_socket' } });
      expect(again.status).toBe(401);
    } finally {
      await new Promise((done) => server.close(done));
    }
  });

  test('valid credentials do not spend the budget; wrong admin tokens do', async ({ h, owner }) => {
    const { call } = limited(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 3 });
    for (let i = 0; i < 20; i++) expect((await call('GET', '/api/v1/auth/me', { token: owner.token })).status).toBe(200);
    const session = (adminToken: string) =>
      call('POST', `/admin/v1/users/${owner.id}/sessions`, { headers: { 'x-admin-token': adminToken }, body: {} });
    for (let i = 0; i < 20; i++) expect((await session(ADMIN_TOKEN)).status).toBe(201);
    expect((await call('GET', '/api/v1/auth/me', { token: 'ses_wrong' })).status).toBe(401);
    expect((await session('wrong-admin-token-000')).status).toBe(401);
    expect((await call('GET', '/api/v1/auth/me')).status).toBe(401);
    const r = await session(ADMIN_TOKEN);
    expect(r.status).toBe(429);
    expect(r.body.code).toBe('TOO_MANY_REQUESTS');
  });

  test('X-Forwarded-For is believed only with TRUST_PROXY, and then only as far as the trusted hops', async ({ h }) => {
    const untrusted = limited(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 2 });
    const spoofed = (i: number) => ({ token: 'svc_x', headers: { 'x-forwarded-for': `10.0.0.${i}` } });
    const plain: number[] = [];
    for (let i = 0; i < 4; i++) plain.push((await untrusted.call('GET', '/api/v1/auth/me', spoofed(i))).status);
    expect(plain).toEqual([401, 401, 429, 429]);

    const proxied = limited(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 2, TRUST_PROXY: 1 });
    const distinct: number[] = [];
    for (let i = 0; i < 4; i++) distinct.push((await proxied.call('GET', '/api/v1/auth/me', spoofed(i))).status);
    expect(distinct).toEqual([401, 401, 401, 401]);
    // Entries left of the trusted hop are the client's own writing and change nothing.
    const forged: number[] = [];
    for (let i = 0; i < 4; i++) {
      const headers = { 'x-forwarded-for': `172.16.0.${i}, 198.51.100.77` };
      forged.push((await proxied.call('GET', '/api/v1/auth/me', { token: 'svc_x', headers })).status);
    }
    expect(forged).toEqual([401, 401, 429, 429]);
    // Fewer entries than trusted proxies (a client that reached the port directly): the socket's address counts.
    const twoHops = limited(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 2, TRUST_PROXY: 2 });
    const short: number[] = [];
    for (let i = 0; i < 4; i++) short.push((await twoHops.call('GET', '/api/v1/auth/me', spoofed(i))).status);
    expect(short).toEqual([401, 401, 429, 429]);
  });
});

/**
 * A real server (HTTP, /mcp and /ws) over the harness's services with its own limits and a clock moved by hand;
 * TRUST_PROXY 1, so each request's X-Forwarded-For is its client address.
 */
async function servedWithLimits(h: Harness, limits: Limits) {
  let now = 0;
  const config = { ...h.services.config, ...OFF, TRUST_PROXY: 1, ...limits };
  const services = { ...h.services, config, rateLimits: new RateLimits(config, () => now) };
  const app = createApp(services);
  const server = await new Promise<ServerType>((ok) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => ok(s));
  });
  const realtime = await startRealtime(services, server as Server);
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const bearer = (token: string | undefined): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` });
  /** GET /ws from `from`: `connected`, or the refusal's status, code and Retry-After. */
  const ws = (from: string, opts: { header?: string; query?: string; workspace: string }) =>
    new Promise<{ status: number; code?: string; details?: string; retryAfter?: string }>((resolve, reject) => {
      const url = new URL('/ws', base.replace(/^http/, 'ws'));
      url.searchParams.set('workspace_id', opts.workspace);
      if (opts.query !== undefined) url.searchParams.set('token', opts.query);
      const socket = new WebSocket(url, { headers: { 'x-forwarded-for': from, ...bearer(opts.header) } });
      socket.on('message', (data) => {
        if (JSON.parse(data.toString()).type === 'connected') {
          socket.close();
          resolve({ status: 101 });
        }
      });
      socket.on('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          const body = JSON.parse(text);
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, code: body.code, details: body.details, ...(retryAfter ? { retryAfter } : {}) });
        });
      });
      socket.on('error', (err) => {
        if (!/Unexpected server response/.test(err.message)) reject(err);
      });
    });
  const http = async (from: string, path: string, token: string, init: RequestInit = {}) => {
    const res = await fetch(`${base}${path}`, { ...init, headers: { 'x-forwarded-for': from, ...bearer(token), ...(init.headers as Record<string, string>) } });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
  const mcp = (from: string, token: string) =>
    http(from, '/mcp', token, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
  return {
    ws,
    http,
    mcp,
    advance: (ms: number) => (now += ms),
    async close() {
      await realtime.close();
      (server as Server).closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

describe('one failed-authentication budget for every way a credential is presented (issue 29)', () => {
  test('bad tokens over HTTP, API-key form, MCP and /ws (header or query) spend one budget per address; /ws is then refused like HTTP', async ({ h, owner, ws: workspace }) => {
    const s = await servedWithLimits(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 5 });
    try {
      const guesser = '203.0.113.50';
      const at = { workspace: workspace.id };
      const spending = [
        (await s.http(guesser, '/api/v1/auth/me', 'ses_guess1')).status,
        (await s.http(guesser, '/api/v1/auth/me', 'svc_guess2')).status,
        (await s.mcp(guesser, 'svc_guess3')).status,
        (await s.ws(guesser, { ...at, header: 'ses_guess4' })).status,
        (await s.ws(guesser, { ...at, query: 'svc_guess5' })).status,
      ];
      expect(spending).toEqual([401, 401, 401, 401, 401]);
      // Spent: every way in is refused as the HTTP routes refuse, with the budget's message, setting and Retry-After.
      for (const opts of [{ header: 'ses_guess6' }, { query: 'svc_guess7' }, {}, { query: 'not-even-a-token' }]) {
        const r = await s.ws(guesser, { ...at, ...opts });
        expect(r, JSON.stringify(opts)).toEqual({ status: 429, code: 'TOO_MANY_REQUESTS', details: expect.stringMatching(/RATE_LIMIT_AUTH_FAILURES_PER_IP/), retryAfter: expect.any(String) });
      }
      expect((await s.http(guesser, '/api/v1/auth/me', 'svc_guess8')).status).toBe(429);
      expect((await s.mcp(guesser, 'svc_guess9')).status).toBe(429);
      // As over HTTP, a credential no one can guess is still checked from the spent address: a valid one connects.
      expect((await s.ws(guesser, { ...at, header: owner.token })).status).toBe(101);
      expect((await s.ws(guesser, { ...at, query: owner.token })).status).toBe(101);
      // Another client's budget is its own: its good token connects, its bad one is a plain 401.
      const other = '198.51.100.9';
      expect((await s.ws(other, { ...at, query: owner.token })).status).toBe(101);
      expect((await s.ws(other, { ...at, header: 'ses_other' })).status).toBe(401);
      expect((await s.http(other, '/api/v1/auth/me', owner.token)).status).toBe(200);
      // The budget refills as over HTTP: one more attempt every 12 s at 5 a minute.
      s.advance(12_000);
      expect((await s.ws(guesser, { ...at, header: 'ses_guess10' })).status).toBe(401);
      expect((await s.ws(guesser, { ...at, header: 'ses_guess11' })).status).toBe(429);
    } finally {
      await s.close();
    }
  });

  test('parallel /ws guesses cannot overrun the budget: each holds a unit while its token is checked', async ({ h, ws: workspace }) => {
    const s = await servedWithLimits(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 4 });
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => s.ws('203.0.113.77', { workspace: workspace.id, header: `svc_parallel${i}` })));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((x) => x === 401)).toHaveLength(4);
      expect(statuses.filter((x) => x === 429)).toHaveLength(16);
    } finally {
      await s.close();
    }
  });
});

describe('failed hook deliveries per hook (issue 28)', () => {
  test("wrongly signed deliveries spend their hook's budget, never the shared sender address's; valid ones always get through", async ({ h, owner, ws }) => {
    const { call } = limited(h, { RATE_LIMIT_AUTH_FAILURES_PER_IP: 3 });
    const stf = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 'echo', version: '1', runtime: 'javascript', code: Buffer.from('return 1;').toString('base64') } });
    const wf = await h.call('POST', '/api/v1/workflows', { token: owner.token, workspace: ws.id, body: { name: 'hooked', stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] } });
    const hook = async () => (await h.call('POST', `/api/v1/workflows/${wf.body.id}/hooks`, { token: owner.token, workspace: ws.id, body: {} })).body;
    const [a, b] = [await hook(), await hook()];
    const github = '140.82.115.1';
    const deliver = (path: string, secret: string, n: number) => {
      const body = { n };
      const sig = `sha256=${createHmac('sha256', secret).update(JSON.stringify(body)).digest('hex')}`;
      return call('POST', path, { from: github, body, headers: { 'x-hub-signature-256': sig } });
    };
    // A tenant's hook whose sender signs wrongly (or someone guessing at it), from the sender's address.
    const wrong: number[] = [];
    for (let i = 0; i < 6; i++) wrong.push((await deliver(a.path, 'whsec_wrong', i)).status);
    expect(wrong).toEqual([401, 401, 401, 429, 429, 429]);
    const spent = await deliver(a.path, 'whsec_wrong', 99);
    expect(spent.body.error).toBe('Too many wrongly signed deliveries to this hook');
    // Every other tenant's correctly signed deliveries from that address, and that hook's own, go on.
    for (let i = 0; i < 5; i++) expect((await deliver(b.path, b.secret, i)).status).toBe(202);
    expect((await deliver(a.path, a.secret, 1)).status).toBe(202);
    // The address itself has spent nothing: a bad token from it is a plain 401, with the budget full.
    const bearer = await call('GET', '/api/v1/auth/me', { from: github, token: 'svc_wrong' });
    expect([bearer.status, bearer.headers.get('ratelimit-remaining')]).toEqual([401, '2']);
    // Another hook's budget is its own, and a hook id spelt in capitals is the same hook.
    expect((await deliver(b.path, 'whsec_wrong', 7)).status).toBe(401);
    expect((await deliver(a.path.toUpperCase().replace('/API/V1/HOOKS/', '/api/v1/hooks/'), 'whsec_wrong', 8)).status).toBe(429);
  });
});

describe('per caller', () => {
  test('a principal over its rate gets 429 with headers; others are unaffected; the budget refills', async ({ h, owner }) => {
    const { call, advance } = limited(h, { RATE_LIMIT_PER_PRINCIPAL: 5 });
    const other = await h.user('other');
    const key = await apiKey(h, owner.token);
    const seen: Res[] = [];
    for (let i = 0; i < 5; i++) seen.push(await call('GET', '/api/v1/auth/me', { token: owner.token }));
    expect(seen.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(seen.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(['4', '3', '2', '1', '0']);
    expect(seen.map((r) => r.headers.get('ratelimit-reset'))).toEqual(['12', '24', '36', '48', '60']);
    expect(rateHeaders(seen[0]!)).toMatchObject({ limit: '5', policy: '5;w=60', retryAfter: null });

    const refused = await call('GET', '/api/v1/auth/me', { token: owner.token });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Rate limit of this user exceeded', code: 'TOO_MANY_REQUESTS', details: expect.any(String) });
    expect(refused.body.details).toMatch(/RATE_LIMIT_PER_PRINCIPAL/);
    expect(rateHeaders(refused)).toMatchObject({ limit: '5', remaining: '0', reset: '60', retryAfter: '12' });

    // Another user, and the owner's API key (a principal of its own), have their own budgets.
    expect(rateHeaders(await call('GET', '/api/v1/auth/me', { token: other.token }))).toMatchObject({ remaining: '4' });
    const byKey = await call('GET', '/api/v1/auth/me', { token: key });
    expect(byKey.status).toBe(200);
    expect(byKey.headers.get('ratelimit-remaining')).toBe('4');

    advance(12_000);
    expect(rateHeaders(await call('GET', '/api/v1/auth/me', { token: owner.token }))).toMatchObject({ remaining: '0' });
    expect((await call('GET', '/api/v1/auth/me', { token: owner.token })).status).toBe(429);
    advance(60_000);
    expect(rateHeaders(await call('GET', '/api/v1/auth/me', { token: owner.token }))).toMatchObject({ remaining: '4', reset: '12' });
  });

  test('an API key over its rate is refused as such', async ({ h, owner }) => {
    const { call } = limited(h, { RATE_LIMIT_PER_PRINCIPAL: 2 });
    const key = await apiKey(h, owner.token);
    await call('GET', '/api/v1/auth/me', { token: key });
    await call('GET', '/api/v1/auth/me', { token: key });
    const r = await call('GET', '/api/v1/auth/me', { token: key });
    expect([r.status, r.body.error]).toEqual([429, 'Rate limit of this API key exceeded']);
  });

  test('anonymous calls are budgeted per client address; the admin interface is not budgeted per caller', async ({ h, owner }) => {
    const { call } = limited(h, { RATE_LIMIT_PER_PRINCIPAL: 2 });
    const token = (from: string) => call('POST', '/api/v1/auth/token', { from, body: { grant_type: 'password' } });
    expect((await token('203.0.113.20')).headers.get('ratelimit-remaining')).toBe('1');
    await token('203.0.113.20');
    const r = await token('203.0.113.20');
    expect([r.status, r.body.error]).toEqual([429, 'Rate limit of this client address exceeded']);
    expect((await token('203.0.113.21')).status).not.toBe(429);
    for (let i = 0; i < 5; i++) {
      const headers = { 'x-admin-token': ADMIN_TOKEN };
      const a = await call('POST', `/admin/v1/users/${owner.id}/sessions`, { from: '203.0.113.20', headers, body: {} });
      expect(a.status).toBe(201);
      expect(a.headers.get('ratelimit-limit')).toBeNull();
    }
  });
});

describe('per workspace', () => {
  test('all callers of a workspace share its budget; other workspaces and non-members do not touch it', async ({ h, owner, ws }) => {
    const { call, advance } = limited(h, { RATE_LIMIT_PER_WORKSPACE: 4, RATE_LIMIT_PER_PRINCIPAL: 100 });
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email);
    const other = await h.workspace(owner.token, 'Other');
    const stranger = await h.user('stranger');
    const [k1, k2] = [await apiKey(h, owner.token), await apiKey(h, member.token)];
    const get = (token: string, id = ws.id) => call('GET', `/api/v1/workspaces/${id}`, { token });

    const seen = [await get(k1), await get(k2), await get(k1), await get(k2)];
    expect(seen.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    // The tighter budget is the one shown: the workspace's 4, not each key's 100.
    expect(seen.map((r) => [r.headers.get('ratelimit-limit'), r.headers.get('ratelimit-remaining')])).toEqual([
      ['4', '3'],
      ['4', '2'],
      ['4', '1'],
      ['4', '0'],
    ]);
    for (const token of [k2, k1, owner.token]) {
      const r = await get(token);
      expect([r.status, r.body.code, r.body.error]).toEqual([429, 'TOO_MANY_REQUESTS', 'Rate limit of this workspace exceeded']);
      expect(rateHeaders(r)).toMatchObject({ limit: '4', remaining: '0', retryAfter: '15' });
    }
    // Another workspace of the same caller is unaffected.
    const elsewhere = await get(k1, other.id);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.headers.get('ratelimit-remaining')).toBe('3');

    // A non-member's refused requests do not spend the workspace's budget.
    advance(15_000);
    for (let i = 0; i < 10; i++) expect((await get(stranger.token)).status).toBe(403);
    expect((await get(k2)).status).toBe(200);
    expect((await get(k1)).status).toBe(429);
  });
});

test('0 turns every limit off: no headers, never 429', async ({ h, owner }) => {
  const { call } = limited(h, {});
  for (let i = 0; i < 100; i++) {
    const r = await call('GET', '/api/v1/auth/me', { token: i % 2 ? owner.token : 'svc_bad' });
    expect(r.status).toBe(i % 2 ? 200 : 401);
    expect(r.headers.get('ratelimit-limit')).toBeNull();
  }
});
