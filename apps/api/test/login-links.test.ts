import { createHash } from 'node:crypto';
import { sql } from '@wds/db';
import { SignJWT } from 'jose';
import { afterAll } from 'vitest';
import { createApp } from '../src/app.js';
import { RateLimits } from '../src/http/rate-limit.js';
import { createLogger } from '../src/logger.js';
import { runNode } from './processes.js';
import { ADMIN_TOKEN, Harness, JWT_SECRET, type Res, describe, eventually, expect, invalidation, test } from './support.js';

/**
 * Browser sign-in without an authorization server (issue 31): one-time login links made by the operator (admin
 * interface, CLI), redeemed once by the console's page for a session token, and logout.
 */
const admin = { 'x-admin-token': ADMIN_TOKEN };
const FAKE_ID = '01900000-0000-7000-8000-000000000000';

const makeLink = (h: Harness, userId: string) => h.call('POST', `/admin/v1/users/${userId}/login-links`, { headers: admin });
const redeem = (h: Harness, code: unknown) => h.call('POST', '/api/v1/auth/login-links/redeem', { body: { code } });
/** The code of a link's URL: what the console's page reads from the fragment. */
const codeOf = (url: string) => new URL(url).hash.replace(/^#code=/, '');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** A fresh link's code for the user, checked. */
async function linkCode(h: Harness, userId: string): Promise<string> {
  const r = await makeLink(h, userId);
  expect(r.status).toBe(201);
  return codeOf(r.body.url);
}

const sessionsOf = async (h: Harness, userId: string) =>
  (await h.services.db.selectFrom('platform.sessions').select('id').where('user_id', '=', userId).execute()).length;

const auditOf = (h: Harness, actions: string[]) =>
  h.services.db.selectFrom('platform.audit_logs').selectAll().where('action', 'in', actions).orderBy('id').execute();

/**
 * Another app over the harness's services with a failed-authentication budget of `perMinute` and a clock that stands
 * still; requests come from the given client address.
 */
function budgetOf(h: Harness, perMinute: number) {
  const config = { ...h.services.config, RATE_LIMIT_AUTH_FAILURES_PER_IP: perMinute };
  const app = createApp({ ...h.services, config, rateLimits: new RateLimits(config, () => 0) });
  const call = async (path: string, init: { body?: unknown; token?: string }, from: string): Promise<Res> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const env = { incoming: { socket: { remoteAddress: from, remotePort: 40000, remoteFamily: 'IPv4' } } };
    const res = await app.request(path, { method: body === undefined ? 'GET' : 'POST', headers, body }, env);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
  const guess = (from: string, i: number) => call('/api/v1/auth/login-links/redeem', { body: { code: `guess-${i}` } }, from);
  return { call, guess };
}

/** Backends of this database waiting for a lock. */
const waitingOnLocks = async (h: Harness) =>
  Number(
    (await sql<{ n: string }>`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(h.services.db))
      .rows[0]?.n,
  );

const hs256 = (claims: Record<string, unknown>, sub: string) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime('5m').sign(new TextEncoder().encode(JWT_SECRET));

describe('login links (issue 31)', () => {
  test('the admin interface makes a link to the console page, valid 15 minutes, stored as its hash only', async ({ h, owner }) => {
    const before = Date.now();
    const r = await makeLink(h, owner.id);
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(['expires_at', 'url']);
    // The harness sets no CONSOLE_URL: the service's own address, the code in the fragment (never sent to a server).
    expect(r.body.url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/console\/login#code=[A-Za-z0-9_-]{43}$/);
    const expires = new Date(r.body.expires_at).getTime();
    expect(expires - before).toBeGreaterThan(14 * 60_000);
    expect(expires - before).toBeLessThanOrEqual(15 * 60_000 + 5_000);

    const code = codeOf(r.body.url);
    const rows = await h.services.db.selectFrom('platform.login_links').selectAll().where('user_id', '=', owner.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ code_hash: sha256(code), used_at: null, created_by: 'admin' });
    expect(JSON.stringify(rows)).not.toContain(code);

    // Unknown users: 404; a user id that is no UUID names nothing either.
    expect((await makeLink(h, FAKE_ID)).status).toBe(404);
    expect((await h.call('POST', '/admin/v1/users/not-a-uuid/login-links', { headers: admin })).status).toBe(404);
  });

  test('the page redeems the code once for a session token of the link’s user; used, expired and wrong codes are 401', async ({ h, owner }) => {
    const code = await linkCode(h, owner.id);
    const r = await redeem(h, code);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body.token).toMatch(/^ses_/);
    expect(new Date(r.body.expires_at).getTime()).toBeGreaterThan(Date.now() + 29 * 24 * 3600_000);
    const me = await h.call('GET', '/api/v1/auth/me', { token: r.body.token });
    expect(me.body).toEqual({ id: owner.id, email: owner.email, name: 'owner' });
    // A session like any other: it may create workspaces.
    expect((await h.call('POST', '/api/v1/workspaces', { token: r.body.token, body: { name: 'from a link' } })).status).toBe(201);

    const expiredCode = await linkCode(h, owner.id);
    await h.services.db
      .updateTable('platform.login_links')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('code_hash', '=', sha256(expiredCode))
      .execute();
    for (const [what, bad] of [
      ['used', code],
      ['expired', expiredCode],
      ['wrong', `${code.slice(0, -1)}${code.endsWith('A') ? 'B' : 'A'}`],
      ['made up', 'made-up-code-0123456789'],
    ] as const) {
      const refused = await redeem(h, bad);
      expect([refused.status, refused.body.code], what).toEqual([401, 'UNAUTHORIZED']);
      // One answer for every reason: a guesser learns nothing from it, and the code is not echoed.
      expect(refused.body.error, what).toBe('The login link is not valid');
      expect(JSON.stringify(refused.body), what).not.toContain(bad);
    }
  });

  test('two redemptions racing for one code give one session', async ({ h }) => {
    const user = await h.user('race');
    const code = await linkCode(h, user.id);
    const sessions = await sessionsOf(h, user.id);
    const answers = await Promise.all(Array.from({ length: 8 }, () => redeem(h, code)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401, 401, 401, 401]);
    expect(await sessionsOf(h, user.id)).toBe(sessions + 1);
  });

  test('a new link removes the user’s used ones; unused links stay redeemable', async ({ h }) => {
    const user = await h.user('prune');
    const used = await linkCode(h, user.id);
    expect((await redeem(h, used)).status).toBe(200);
    const pending = await linkCode(h, user.id);
    await linkCode(h, user.id);
    const hashes = (await h.services.db.selectFrom('platform.login_links').select('code_hash').where('user_id', '=', user.id).execute()).map((r) => r.code_hash);
    expect(hashes).toHaveLength(2);
    expect(hashes).not.toContain(sha256(used));
    expect((await redeem(h, pending)).status).toBe(200);
  });

  test('bad input is a 4xx, hostile text stays inert, and nothing of the code reaches logs, audit or errors', async ({ h }) => {
    const user = await h.user('quiet');
    const other = await h.user('bystander');
    const lines: string[] = [];
    const saved = h.services.logger;
    h.services.logger = createLogger('trace', { write: (s: string) => void lines.push(s) });
    try {
      for (const hostile of ["' OR 1=1 --", '$$; DROP TABLE platform.users; $$', '/* x', '"}', '../../etc/passwd', '\u202e', 'x'.repeat(256)]) {
        const r = await redeem(h, hostile);
        expect([r.status, r.body.code], hostile).toEqual([401, 'UNAUTHORIZED']);
      }
      for (const bad of ['', 'a\u0000b', 'x'.repeat(257), 42, null, ['a'], { code: 'a' }]) {
        const r = await redeem(h, bad);
        expect(r.status, JSON.stringify(bad)).toBe(400);
        expect(['VALIDATION_ERROR', 'BAD_REQUEST']).toContain(r.body.code);
      }
      expect((await h.call('POST', '/api/v1/auth/login-links/redeem', { rawBody: '{"code":', headers: { 'content-type': 'application/json' } })).status).toBe(400);

      const made = await makeLink(h, user.id);
      const code = codeOf(made.body.url);
      const redeemed = await redeem(h, code);
      expect(redeemed.status).toBe(200);
      // The session is the link's user's, never anyone else's.
      expect((await h.call('GET', '/api/v1/auth/me', { token: redeemed.body.token })).body.id).toBe(user.id);
      expect((await h.call('GET', '/api/v1/auth/me', { token: redeemed.body.token })).body.id).not.toBe(other.id);
      const again = await redeem(h, code);
      expect(again.status).toBe(401);

      const logs = lines.join('\n');
      expect(logs).toContain('/api/v1/auth/login-links/redeem');
      expect(logs).not.toContain(code);
      expect(logs).not.toContain(redeemed.body.token);

      // The audit entries name the user and the link, never the code, the URL or the token.
      const entries = (await auditOf(h, ['create_login_link', 'redeem_login_link'])).filter(
        (e) => (e.details as { user_id?: string }).user_id === user.id || e.user_id === user.id,
      );
      expect(entries.map((e) => e.action)).toEqual(['create_login_link', 'redeem_login_link']);
      const [created, used] = entries as [(typeof entries)[number], (typeof entries)[number]];
      expect(created).toMatchObject({ workspace_id: null, user_id: null, resource_type: 'login_link', transport: 'http' });
      expect(created.details).toEqual({ user_id: user.id, created_by: 'admin', expires_at: made.body.expires_at });
      expect(used).toMatchObject({ workspace_id: null, user_id: user.id, resource_type: 'login_link', resource_id: created.resource_id });
      expect(Object.keys(used.details as object)).toEqual(['session_id']);
      const text = JSON.stringify(entries);
      for (const secret of [code, redeemed.body.token, sha256(code)]) expect(text).not.toContain(secret);
    } finally {
      h.services.logger = saved;
    }
  });

  test('failed redemptions spend the failed-authentication budget of the address, shared with Bearer tokens', async ({ h }) => {
    const { call, guess } = budgetOf(h, 3);
    const from = '198.51.100.7';
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await guess(from, i));
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 429, 429]);
    const refused = answers[3] as Res;
    expect(refused.body).toMatchObject({ code: 'TOO_MANY_REQUESTS', error: 'Too many failed authentication attempts from this address' });
    expect(refused.body.details).toContain('RATE_LIMIT_AUTH_FAILURES_PER_IP');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The same budget as a wrong Bearer token's.
    expect((await call('/api/v1/auth/me', { token: 'ses_guess' }, from)).status).toBe(429);
    // A code no one can guess still works from there (as a valid token does): the budget slows guessing only.
    const user = await h.user('budget');
    expect((await call('/api/v1/auth/login-links/redeem', { body: { code: await linkCode(h, user.id) } }, from)).status).toBe(200);

    // Wrong Bearer tokens spend what a redemption then has left: one budget.
    for (let i = 0; i < 3; i++) expect((await call('/api/v1/auth/me', { token: `svc_guess${i}` }, '198.51.100.8')).status).toBe(401);
    expect((await guess('198.51.100.8', 99)).status).toBe(429);
    // Successful redemptions spend nothing.
    for (let i = 0; i < 5; i++) {
      expect((await call('/api/v1/auth/login-links/redeem', { body: { code: await linkCode(h, user.id) } }, '198.51.100.9')).status).toBe(200);
    }
    expect((await guess('198.51.100.9', 100)).status).toBe(401);
  });

  test('a guess holds its unit of the budget while its code is checked: parallel guesses cannot overrun it', async ({ h }) => {
    const { guess } = budgetOf(h, 3);
    const from = '198.51.100.10';
    // The redemptions' UPDATE waits behind this lock, so the first three are still being checked when three more come.
    let release = () => {};
    const released = new Promise<void>((r) => (release = r));
    let holding: Promise<void> = Promise.resolve();
    await new Promise<void>((locked) => {
      holding = h.services.db.connection().execute(async (conn) => {
        await sql`BEGIN`.execute(conn);
        await sql`LOCK TABLE platform.login_links IN EXCLUSIVE MODE`.execute(conn);
        locked();
        await released;
        await sql`COMMIT`.execute(conn);
      });
    });
    const first = [0, 1, 2].map((i) => guess(from, i));
    await eventually(async () => (await waitingOnLocks(h)) === 3, 10_000);
    const second = [3, 4, 5].map((i) => guess(from, i));
    // Their budget is charged as they arrive, long before this.
    await new Promise((r) => setTimeout(r, 100));
    release();
    await holding;
    expect((await Promise.all(first)).map((r) => r.status)).toEqual([401, 401, 401]);
    expect((await Promise.all(second)).map((r) => r.status)).toEqual([429, 429, 429]);
  });

  test('pnpm cli user login-link --email prints a link under CONSOLE_URL; an unknown email fails clearly', async ({ h }) => {
    const user = await h.user('cli');
    const env = { DATABASE_URL: h.url, CONSOLE_URL: 'https://console.example.test/app/', LOG_LEVEL: 'silent' };
    const made = await run(['dist/cli.js', 'user', 'login-link', '--email', user.email.toUpperCase()], env);
    expect(made.code, made.stderr).toBe(0);
    const printed = JSON.parse(made.stdout);
    expect(Object.keys(printed).sort()).toEqual(['expires_at', 'url']);
    expect(printed.url).toMatch(/^https:\/\/console\.example\.test\/app\/console\/login#code=[A-Za-z0-9_-]{43}$/);
    const code = codeOf(printed.url);
    const row = await h.services.db.selectFrom('platform.login_links').selectAll().where('code_hash', '=', sha256(code)).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ user_id: user.id, created_by: 'cli' });
    const entry = (await auditOf(h, ['create_login_link'])).find((e) => e.resource_id === row.id);
    expect(entry).toMatchObject({ user_id: null, transport: null, details: { user_id: user.id, created_by: 'cli', expires_at: printed.expires_at } });
    expect(JSON.stringify(entry)).not.toContain(code);
    const r = await redeem(h, code);
    expect(r.status).toBe(200);
    expect((await h.call('GET', '/api/v1/auth/me', { token: r.body.token })).body.id).toBe(user.id);

    const unknown = await run(['dist/cli.js', 'user', 'login-link', '--email', 'nobody@example.test'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No user has the email "nobody@example.test"');
    expect(unknown.stdout).toBe('');
    const usage = await run(['dist/cli.js', 'user', 'login-link'], env);
    expect([usage.code, usage.stderr.includes('user login-link --email')]).toEqual([2, true]);
  });
});

const run = runNode;

let other: Harness | undefined;
afterAll(async () => {
  await other?.close();
});


describe('logout (issue 31)', () => {
  test('revokes the presenting session at once; a second logout is 401; the user’s other sessions go on', async ({ h }) => {
    const user = await h.user('leaving');
    const other = await h.call('POST', `/admin/v1/users/${user.id}/sessions`, { headers: admin, body: {} });
    expect((await h.call('GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
    const out = await h.call('POST', '/api/v1/auth/logout', { token: user.token });
    expect(out.status).toBe(204);
    expect((await h.call('GET', '/api/v1/auth/me', { token: user.token })).status).toBe(401);
    const twice = await h.call('POST', '/api/v1/auth/logout', { token: user.token });
    expect([twice.status, twice.body.code]).toEqual([401, 'UNAUTHORIZED']);
    expect((await h.call('GET', '/api/v1/auth/me', { token: other.body.token })).status).toBe(200);

    const revoked = await h.services.db.selectFrom('platform.sessions').select(['id', 'revoked_at']).where('user_id', '=', user.id).where('revoked_at', 'is not', null).execute();
    expect(revoked).toHaveLength(1);
    const entries = (await auditOf(h, ['logout'])).filter((e) => e.user_id === user.id);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ workspace_id: null, resource_type: 'session', resource_id: revoked[0]?.id, details: {} });
  });

  test('an API key or a JWT is refused with 403: logout ends session tokens only', async ({ h }) => {
    const user = await h.user('keyholder');
    const key = (await h.call('POST', '/api/v1/api-keys', { token: user.token, body: { name: 'agent' } })).body.key;
    const jwt = await hs256({ email: user.email, email_verified: true }, `logout-${user.id}`);
    for (const token of [key, jwt]) {
      const r = await h.call('POST', '/api/v1/auth/logout', { token });
      expect([r.status, r.body.code, r.body.error]).toEqual([403, 'FORBIDDEN', 'This operation needs a session token']);
      expect((await h.call('GET', '/api/v1/auth/me', { token })).status).toBe(200);
    }
    expect((await h.call('GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
    expect((await h.call('POST', '/api/v1/auth/logout', {})).status).toBe(401);
  });

  test('every process stops accepting the session as soon as the invalidation reaches it', async ({ h }) => {
    other ??= await Harness.create({}, h.url);
    const user = await h.user('everywhere');
    // The other process has the principal cached.
    expect((await other.call('GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
    const delivered = invalidation(other, `user:${user.id}`);
    expect((await h.call('POST', '/api/v1/auth/logout', { token: user.token })).status).toBe(204);
    await delivered;
    expect((await other.call('GET', '/api/v1/auth/me', { token: user.token })).status).toBe(401);
  });
});
