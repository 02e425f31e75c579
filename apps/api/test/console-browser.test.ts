import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, a11yViolations, heading, linkFor as linkOf, openConsole, shots, watchedPage as watched } from './console-support.js';
import { Harness } from './support.js';

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
});
