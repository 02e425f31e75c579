import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CHROMIUM_LOOPBACK_ARGS, chromiumPath } from '@wds/testkit';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, Harness } from './support.js';
import { repoRoot } from './programs.js';

/**
 * The console (apps/console, docs/console.md) in a real browser (Debian's chromium, headless; everything on
 * 127.0.0.1), as a person uses it: a login link signs them in, they create a workspace, they sign out. Every page
 * must run without a console error, a failed request or a Content-Security-Policy violation. Screenshots go to
 * apps/api/.cache/screenshots/ (not committed) for a person to look at.
 */
const shots = join(repoRoot, 'apps', 'api', '.cache', 'screenshots');

let h: Harness;
let base: string;
let browser: Browser;

beforeAll(async () => {
  h = await Harness.create();
  base = await h.listen();
  browser = await chromium.launch({ executablePath: await chromiumPath(), args: [...CHROMIUM_LOOPBACK_ARGS] });
  mkdirSync(shots, { recursive: true });
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** A login link's code for a new user (the admin interface), and the user. */
async function linkFor(tag: string) {
  const user = await h.user(tag);
  const link = await h.call('POST', `/admin/v1/users/${user.id}/login-links`, { headers: { 'x-admin-token': ADMIN_TOKEN } });
  expect(link.status).toBe(201);
  const code = new URL(link.body.url).hash.slice('#code='.length);
  expect(code.length).toBeGreaterThan(20);
  return { user, code };
}

/** A page that records what must never happen on it: console errors, uncaught errors, failed requests, dialogs. */
async function watchedPage(): Promise<{ page: Page; problems: string[]; requests: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  page.on('dialog', (d) => problems.push(`dialog: ${d.message()}`));
  page.on('request', (r) => requests.push(r.url()));
  return { page, problems, requests };
}

/** axe-core's source, run in the page through the debugging protocol (which the page's CSP does not govern). */
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The serious and critical accessibility violations axe-core finds on the page as it is now. */
async function a11yViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as { violations: { id: string; impact: string | null; nodes: unknown[] }[] };
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`);
}

const heading = (page: Page, name: string) => expect.poll(() => page.getByRole('heading', { name }).count(), { timeout: 15_000 }).toBe(1);

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
