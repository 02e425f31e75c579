import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, a11yViolations, heading, linkFor as linkOf, openConsole, shots, watchedPage as watched } from './console-support.js';
import { Harness, JWT_SECRET } from './support.js';

/**
 * The console (apps/console, docs/console.md) in a real browser (Debian's chromium, headless; everything on
 * 127.0.0.1), as a person uses it: a login link signs them in, they create a workspace, they sign out. Every page
 * must run without a console error, a failed request or a Content-Security-Policy violation. Screenshots go to
 * apps/api/.cache/screenshots/ (not committed) for a person to look at.
 */
let c: ConsoleHarness;
let h: Harness;
let base: string;

beforeAll(async () => {
  c = await openConsole();
  ({ h, base } = c);
}, 600_000);
afterAll(async () => {
  await c?.close();
});

const linkFor = (tag: string) => linkOf(h, tag);
const watchedPage = () => watched(c.browser);

describe('the console', () => {
  it('a login link signs in (its code gone from the address bar), a workspace is created, sign-out revokes the session', async () => {
    const { user, code } = await linkFor('browser');
    const { page, problems, requests } = await watchedPage();
    await page.goto(`${base}/console/login#code=${code}`);
    await heading(page, 'Workspaces');
    expect(page.url()).toBe(`${base}/console`);
    // The code went to the redeem call's body only: never into a URL the browser requested.
    expect(requests.some((u) => u.includes(code))).toBe(false);
    await expect.poll(() => page.getByText(`Signed in as browser <${user.email}>`).count()).toBe(1);
    await page.screenshot({ path: join(shots, 'console-workspaces-empty.png') });
    expect(await a11yViolations(page)).toEqual([]);

    await page.getByLabel('New workspace').fill('Acme <img src=x onerror=alert(1)>');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'Acme <img src=x onerror=alert(1)>' }).count()).toBe(1);
    // A long name without spaces wraps inside its cell instead of widening the page.
    const long = 'x'.repeat(255);
    await page.getByLabel('New workspace').fill(long);
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await expect.poll(() => page.getByRole('cell', { name: long }).count()).toBe(1);
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    await page.screenshot({ path: join(shots, 'console-workspaces.png') });
    expect(await a11yViolations(page)).toEqual([]);
    const token = (await page.evaluate("sessionStorage.getItem('wds.token')")) as string;
    expect((await h.call('GET', '/api/v1/workspaces', { token })).body.map((w: any) => w.name).sort()).toEqual(['Acme <img src=x onerror=alert(1)>', long]);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
    expect(await a11yViolations(page)).toEqual([]);
    expect(await page.evaluate("sessionStorage.getItem('wds.token')")).toBeNull();
    expect((await h.call('GET', '/api/v1/auth/me', { token })).status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a link used once does not sign in again; an API key pasted in does', async () => {
    const { user, code } = await linkFor('twice');
    const first = await watchedPage();
    await first.page.goto(`${base}/console/login#code=${code}`);
    await heading(first.page, 'Workspaces');
    await first.page.close();

    const again = await watchedPage();
    await again.page.goto(`${base}/console/login#code=${code}`);
    await heading(again.page, 'Sign-in failed');
    expect(await again.page.getByRole('status').textContent()).toContain('already used');
    await again.page.screenshot({ path: join(shots, 'console-used-link.png') });
    // The refused redemption is the one expected failure on this page: a 401 the page explains.
    expect(again.problems.filter((p) => !p.includes('401'))).toEqual([]);

    const key = await h.call('POST', '/api/v1/api-keys', { token: user.token, body: { name: 'pasted' } });
    await again.page.getByLabel('API key or token').fill(key.body.key);
    await again.page.getByRole('button', { name: 'Sign in with the key' }).click();
    await heading(again.page, 'Workspaces');
    await again.page.close();
  });

  it('GET / opens it; its page and assets carry a strict policy; CONSOLE_ENABLED=false turns it off', async () => {
    const root = await fetch(`${base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console/');
    const page = await fetch(`${base}/console/anything/deep`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(page.headers.get('cache-control')).toBe('no-store');
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(await page.text())?.[1];
    const js = await fetch(`${base}${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${base}/console/assets/..%2F..%2Fpackage.json`)).status).toBe(404);
    expect((await fetch(`${base}/console/assets/nothing.js`)).status).toBe(404);

    const off = await Harness.create({ CONSOLE_ENABLED: 'false' }, h.url);
    try {
      expect((await off.app.request('/console/')).status).toBe(404);
      expect((await off.app.request('/')).status).toBe(404);
    } finally {
      await off.close();
    }
  });

  it('single sign-on: the authorization-code flow with PKCE signs in where an authorization server is configured', async () => {
    // The console's public address is https (the exchange takes no other redirect URI); the browser reaches this
    // test's server on 127.0.0.1, so the fake authorization server, having checked the registered https redirect
    // URI, sends the browser to the same path here: what the TLS-terminating proxy in front of a deployment does.
    const CONSOLE = 'https://console.example.test';
    const codes = new Map<string, string>();
    const exchanged: URLSearchParams[] = [];
    let sso: Harness | undefined;
    let ssoBase = '';
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname === '/authorize') {
        const q = url.searchParams;
        const fine = q.get('redirect_uri') === `${CONSOLE}/console/callback` && q.get('client_id') === 'console' && q.get('code_challenge_method') === 'S256' && q.get('response_type') === 'code';
        if (!fine) return res.writeHead(400).end('bad authorization request');
        const code = `code-${codes.size + 1}`;
        codes.set(code, q.get('code_challenge') as string);
        res.writeHead(302, { location: `${ssoBase}/console/callback?code=${code}&state=${encodeURIComponent(q.get('state') as string)}` });
        return res.end();
      }
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', async () => {
        const form = new URLSearchParams(body);
        exchanged.push(form);
        const challenge = codes.get(form.get('code') ?? '');
        const s256 = createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url');
        res.setHeader('content-type', 'application/json');
        if (form.get('client_secret') !== 'sso-secret' || challenge !== s256 || form.get('redirect_uri') !== `${CONSOLE}/console/callback`) {
          return res.writeHead(400).end(JSON.stringify({ error: 'invalid_grant' }));
        }
        codes.delete(form.get('code') as string);
        const access_token = await new SignJWT({ email: 'sso.person@example.test', email_verified: true, name: 'Sso Person' })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('sso-person')
          .setExpirationTime('10m')
          .sign(new TextEncoder().encode(JWT_SECRET));
        res.end(JSON.stringify({ access_token, refresh_token: 'refresh-1', token_type: 'Bearer', expires_in: 600 }));
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const as = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      sso = await Harness.create({ AUTH_AUTHORIZE_URL: `${as}/authorize`, AUTH_TOKEN_URL: `${as}/token`, AUTH_CLIENT_ID: 'console', AUTH_CLIENT_SECRET: 'sso-secret', CONSOLE_URL: CONSOLE }, h.url);
      ssoBase = await sso.listen();
      const methods = await sso.call('GET', '/api/v1/auth/sign-in-methods');
      expect(methods.body).toEqual({
        authorization_code: { authorization_endpoint: `${as}/authorize`, client_id: 'console', scope: 'openid email profile', redirect_uri: `${CONSOLE}/console/callback` },
        login_links: true,
      });
      expect(JSON.stringify(methods.body)).not.toContain('sso-secret');

      const { page, problems, settled } = await watched(c.browser);
      await page.goto(`${ssoBase}/console/login`);
      await page.getByRole('button', { name: 'Sign in with single sign-on' }).click();
      await heading(page, 'Workspaces');
      expect(page.url()).toBe(`${ssoBase}/console`);
      await expect.poll(() => page.getByText('Signed in as Sso Person <sso.person@example.test>').count()).toBe(1);
      // The client secret was added by the service; the page sent the verifier; the code left the address bar.
      expect(exchanged.at(-1)?.get('client_secret')).toBe('sso-secret');
      expect(exchanged.at(-1)?.get('code_verifier')?.length).toBeGreaterThanOrEqual(43);
      expect(await page.evaluate('sessionStorage.getItem("wds.refresh")')).toBe('refresh-1');
      expect(await page.evaluate('sessionStorage.getItem("wds.pkce")')).toBeNull();
      expect(await page.evaluate('localStorage.length')).toBe(0);

      // A callback this tab did not start (a forged or replayed one) is refused. (First the page's own requests end:
      // leaving it mid-request would cut one short, a failed request.)
      await settled();
      await page.goto(`${ssoBase}/console/callback?code=code-1&state=forged`);
      await heading(page, 'Sign-in failed');
      expect(problems).toEqual([]);
      await page.close();

      const without = await h.call('GET', '/api/v1/auth/sign-in-methods');
      expect(without.body).toEqual({ authorization_code: null, login_links: true });
      await expect(Harness.create({ AUTH_AUTHORIZE_URL: `${as}/authorize`, AUTH_TOKEN_URL: `${as}/token`, AUTH_CLIENT_ID: 'console' }, h.url)).rejects.toThrow(/CONSOLE_URL to be an https URL/);
    } finally {
      await sso?.close();
      server.close();
    }
  });
});
