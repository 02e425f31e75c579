import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CHROMIUM_LOOPBACK_ARGS, chromiumPath } from '@wds/testkit';
import { type Browser, type Page, chromium } from 'playwright-core';
import { expect } from 'vitest';
import { ADMIN_TOKEN, Harness } from './support.js';
import { repoRoot } from './programs.js';

/**
 * What the console's browser tests share (console-*.test.ts): a real server on the embedded database, Debian's
 * chromium (headless, loopback only) driven by playwright-core, pages that record what must never happen on them,
 * axe-core, and the screenshots folder (apps/api/.cache/screenshots/, not committed) a person looks at.
 */
export const shots = join(repoRoot, 'apps', 'api', '.cache', 'screenshots');

/** Values that must render as inert text wherever data is shown (a test fails if any script runs). */
export const HOSTILE = {
  img: '<img src=x onerror=alert(1)>',
  script: '<script>alert(2)</script>',
  link: 'javascript:alert(3)',
  long: 'x'.repeat(300),
  rtl: '\u202Eשלום עולם مرحبا',
};

export interface ConsoleHarness {
  h: Harness;
  base: string;
  browser: Browser;
  close(): Promise<void>;
}

/** A server listening on 127.0.0.1 and a browser; `close` ends both. */
export async function openConsole(env: Record<string, string> = {}): Promise<ConsoleHarness> {
  const h = await Harness.create(env);
  const base = await h.listen();
  const browser = await chromium.launch({ executablePath: await chromiumPath(), args: [...CHROMIUM_LOOPBACK_ARGS] });
  mkdirSync(shots, { recursive: true });
  return {
    h,
    base,
    browser,
    close: async () => {
      await browser.close();
      await h.close();
    },
  };
}

/** A login link's code for a new user (the admin interface), and the user. */
export async function linkFor(h: Harness, tag: string) {
  const user = await h.user(tag);
  const link = await h.call('POST', `/admin/v1/users/${user.id}/login-links`, { headers: { 'x-admin-token': ADMIN_TOKEN } });
  expect(link.status).toBe(201);
  const code = new URL(link.body.url).hash.slice('#code='.length);
  expect(code.length).toBeGreaterThan(20);
  return { user, code };
}

export interface WatchedPage {
  page: Page;
  /** Console errors, uncaught errors, failed requests, dialogs, CSP violations: each a failure of the page. */
  problems: string[];
  /** Every URL the page requested. */
  requests: string[];
  /**
   * Resolves once no request of the page is in flight: before a test leaves a page (goto, back), so that the
   * navigation cuts none short (a cut request is a failed request, a problem of the page).
   */
  settled(): Promise<void>;
}

/** A page that records what must never happen on it. */
export async function watchedPage(browser: Browser): Promise<WatchedPage> {
  const page = await browser.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    d.dismiss().catch(() => undefined);
  });
  let inFlight = 0;
  page.on('request', (r) => {
    requests.push(r.url());
    inFlight++;
  });
  page.on('requestfinished', () => inFlight--);
  page.on('requestfailed', () => inFlight--);
  // A Content-Security-Policy violation is reported to the page as an event: record it as a problem too.
  await page.addInitScript({
    content: "document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));",
  });
  const settled = () => expect.poll(() => inFlight, { timeout: 15_000 }).toBe(0).then(() => undefined);
  return { page, problems, requests, settled };
}

/** A page signed in with `token` (put into the tab's sessionStorage, as the sign-in page does), opened at `path`. */
export async function signedIn(c: ConsoleHarness, token: string, path = '/console'): Promise<WatchedPage> {
  const w = await watchedPage(c.browser);
  // The sign-in page asks for the sign-in methods as it opens: wait for that answer, so that the next navigation
  // cuts no request short (a failed request is a problem of the page).
  await Promise.all([w.page.waitForResponse((r) => r.url().endsWith('/api/v1/auth/sign-in-methods')), w.page.goto(`${c.base}/console/login`)]);
  await w.page.evaluate(`sessionStorage.setItem('wds.token', ${JSON.stringify(token)})`);
  await w.page.goto(`${c.base}${path}`);
  return w;
}

/** axe-core's source, run in the page through the debugging protocol (which the page's CSP does not govern). */
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The serious and critical accessibility violations axe-core finds on the page as it is now. */
export async function a11yViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as { violations: { id: string; impact: string | null; nodes: unknown[] }[] };
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`);
}

/** Waits for exactly one heading of that name. */
export const heading = (page: Page, name: string) => expect.poll(() => page.getByRole('heading', { name }).count(), { timeout: 15_000 }).toBe(1);

/** Writes a screenshot of the whole page to the screenshots folder. */
export const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

/** True when nothing on the page is wider than the window (a long value wraps instead). */
export const fitsWidth = (page: Page) => page.evaluate('document.documentElement.scrollWidth <= window.innerWidth');
