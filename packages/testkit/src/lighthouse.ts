import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM_LOOPBACK_ARGS, chromiumPath } from './browser.js';
import lighthouse, { type Flags } from 'lighthouse';
import desktopConfig from 'lighthouse/core/config/desktop-config.js';
import puppeteer from 'puppeteer-core';

/**
 * Lighthouse (the npm package) against the built console in Debian's chromium, as the console's checks and its
 * benchmark run it (docs/console.md, apps/api/test/console-lighthouse.test.ts, bench/console-lighthouse.mjs): a chromium of its own with a debugging port on
 * 127.0.0.1 (loopback only, like every browser of the tests), one tab signed in by putting the token into its
 * sessionStorage, and Lighthouse's navigation of that same tab (storage not reset, so the page is signed in). The
 * desktop preset; scores are 0–100.
 */
export type Category = 'accessibility' | 'best-practices' | 'performance';

export interface LighthouseRun {
  scores: Record<Category, number | null>;
  /** The audits that failed (score < 1, not informative), with their titles: what to fix. */
  failed: string[];
  /** With `performance`: first and largest contentful paint, speed index, total blocking time (ms), layout shift. */
  metrics: Record<string, number>;
}

const METRICS = ['first-contentful-paint', 'largest-contentful-paint', 'speed-index', 'total-blocking-time', 'cumulative-layout-shift'];

export interface Lighthouse {
  /**
   * One page's audit. `quick` waits a quarter of a second of quiet (network, CPU) after load instead of Lighthouse's
   * second: enough for a page served from this machine, and what the tests use; the benchmark keeps the defaults.
   */
  audit(path: string, categories: Category[], token?: string, options?: { quick?: boolean }): Promise<LighthouseRun>;
  close(): Promise<void>;
}

export async function openLighthouse(base: string): Promise<Lighthouse> {
  const profile = mkdtempSync(join(tmpdir(), 'wds-lighthouse-'));
  const child = spawn(await chromiumPath(), ['--headless=new', '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0', `--user-data-dir=${profile}`, ...CHROMIUM_LOOPBACK_ARGS, 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const endpoint = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stderr.on('data', (d: Buffer) => {
      seen += d.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(seen);
      if (m) resolve(m[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`chromium exited (${code}): ${seen.slice(-500)}`)));
  });
  const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null });
  return {
    async audit(path, categories, token, options = {}) {
      const page = await browser.newPage();
      try {
        if (token) {
          // The sign-in page asks for the sign-in methods as it opens; the audit's navigation must not cut it short.
          await Promise.all([page.waitForResponse((r) => r.url().endsWith('/api/v1/auth/sign-in-methods')), page.goto(`${base}/console/login`)]);
          await page.evaluate(`sessionStorage.setItem('wds.token', ${JSON.stringify(token)})`);
        }
        const quiet = options.quick ? { pauseAfterFcpMs: 250, pauseAfterLoadMs: 250, networkQuietThresholdMs: 250, cpuQuietThresholdMs: 250 } : {};
        const flags: Flags = { output: 'json', logLevel: 'error', onlyCategories: categories, disableStorageReset: true, ...quiet };
        const result = await lighthouse(`${base}${path}`, flags, desktopConfig, page);
        if (!result) throw new Error('Lighthouse gave no result');
        const lhr = result.lhr;
        const scores = Object.fromEntries(categories.map((c) => [c, lhr.categories[c]?.score == null ? null : Math.round((lhr.categories[c]?.score ?? 0) * 100)])) as LighthouseRun['scores'];
        const failed = categories.flatMap((c) =>
          (lhr.categories[c]?.auditRefs ?? [])
            .filter((r) => r.weight > 0)
            .map((r) => lhr.audits[r.id])
            .filter((a) => a && a.score !== null && a.score < 1)
            .map((a) => `${c}: ${a?.id} (${a?.title})`),
        );
        const metrics = Object.fromEntries(METRICS.flatMap((id) => (typeof lhr.audits[id]?.numericValue === 'number' ? [[id, lhr.audits[id]?.numericValue as number]] : [])));
        return { scores, failed, metrics };
      } finally {
        await page.close();
      }
    },
    async close() {
      const exited = new Promise((r) => child.once('exit', r));
      // Browser.close ends chromium and its helpers gracefully; then nothing writes into the profile any more.
      await browser.close().catch(() => child.kill());
      await exited;
      rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}
