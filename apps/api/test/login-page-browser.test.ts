import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CHROMIUM_LOOPBACK_ARGS, chromiumPath } from '@wds/testkit';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, Harness } from './support.js';
import { repoRoot } from './programs.js';

/**
 * A person opening a login link in a real browser (Debian's chromium, headless; everything on 127.0.0.1): the page
 * at /console/login redeems the link's code, shows who signed in, and signs out. Screenshots go to
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

describe('the login page', () => {
  it('redeems the link, removes the code from the address bar, shows who signed in, and signs out', async () => {
    const { user, code } = await linkFor('browser');
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${base}/console/login#code=${code}`);
    await expect.poll(() => page.getByRole('heading', { name: 'Signed in' }).count(), { timeout: 15_000 }).toBe(1);
    expect(await page.getByRole('status').textContent()).toContain(user.email);
    expect(page.url()).toBe(`${base}/console/login`);
    // The code went to the redeem call's body only: never into a URL the browser requested.
    expect(requests.some((u) => u.includes(code))).toBe(false);
    await page.screenshot({ path: join(shots, 'login-signed-in.png') });
    const token = await page.evaluate(() => sessionStorage.getItem('wds.token'));
    expect(token).toMatch(/^\S+$/);
    expect((await h.call('GET', '/api/v1/auth/me', { token: token as string })).status).toBe(200);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Signed out' }).count(), { timeout: 15_000 }).toBe(1);
    await page.screenshot({ path: join(shots, 'login-signed-out.png') });
    expect(await page.evaluate(() => sessionStorage.getItem('wds.token'))).toBeNull();
    expect((await h.call('GET', '/api/v1/auth/me', { token: token as string })).status).toBe(401);
    await page.close();
  });

  it('a link used once does not sign in again; a page without a code says what to do', async () => {
    const { code } = await linkFor('twice');
    const first = await browser.newPage();
    await first.goto(`${base}/console/login#code=${code}`);
    await expect.poll(() => first.getByRole('heading', { name: 'Signed in' }).count(), { timeout: 15_000 }).toBe(1);
    await first.close();
    const again = await browser.newPage();
    await again.goto(`${base}/console/login#code=${code}`);
    await expect.poll(() => again.getByRole('heading', { name: 'Sign-in failed' }).count(), { timeout: 15_000 }).toBe(1);
    expect(await again.getByRole('status').textContent()).toContain('already used');
    await again.screenshot({ path: join(shots, 'login-used-link.png') });
    await again.goto(`${base}/console/login`);
    await expect.poll(() => again.getByRole('heading', { name: 'Not signed in' }).count(), { timeout: 15_000 }).toBe(1);
    await again.close();
  });

  it('is served with a policy that runs only its own script and sends no referrer', async () => {
    const res = await fetch(`${base}/console/login`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});
