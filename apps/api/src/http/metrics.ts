/**
 * Prometheus metrics at `GET /metrics` (docs/metrics.md). Off unless METRICS_TOKEN or METRICS_PORT is set:
 * - METRICS_TOKEN: served on the main port to `Authorization: Bearer <token>` (compared in constant time); 401
 *   without it or with another one;
 * - METRICS_PORT: served on a listener of its own on HOST, without a token (keep that port off the internet);
 * - on the main port without METRICS_TOKEN, `/metrics` is 404 like any unknown path.
 * Scrapes are neither audited nor counted as requests: they would swamp the request metrics they read.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { unauthorized } from '@wds/errors';
import type { Metrics } from '@wds/metrics';
import { type Context, Hono } from 'hono';
import type { Services } from '../services.js';
import type { AppEnv } from './env.js';
import { renderError, renderNotFound } from './errors.js';

export const METRICS_PATH = '/metrics';

const digest = (s: string) => createHash('sha256').update(s).digest();

const scrape = async (c: Context, metrics: Metrics) => {
  const text = await metrics.render();
  return c.body(text, 200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
};

/** `GET /metrics` on the main app when METRICS_TOKEN is set; nothing (so 404) otherwise. */
export function mountMetrics(app: Hono<AppEnv>, services: Services): void {
  const token = services.config.METRICS_TOKEN;
  if (!token) return;
  const expected = digest(token);
  app.get(METRICS_PATH, (c) => {
    const header = c.req.header('authorization') ?? '';
    const given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    if (!given || !timingSafeEqual(expected, digest(given))) throw unauthorized('Missing or invalid metrics token');
    return scrape(c, services.metrics);
  });
}

/** The app of the METRICS_PORT listener: `/metrics` only, without a token. */
export function metricsApp(metrics: Metrics): Hono {
  const app = new Hono();
  app.onError(renderError as never);
  app.notFound(renderNotFound as never);
  app.get(METRICS_PATH, (c) => scrape(c, metrics));
  return app;
}

/** Requests outside the declared operations, by fixed names; undefined: not counted (the scrapes). */
const FIXED: Record<string, string | undefined> = {
  '/healthz': 'healthz',
  '/readyz': 'readyz',
  '/api/v1/openapi.json': 'openapi',
  '/mcp': 'mcp',
  [METRICS_PATH]: undefined,
};

/**
 * The `operation` label of an answered request: the declared operation of its route (set by `mount`), a fixed
 * name for the few others, `unmatched` for the rest (404, 405); undefined for scrapes. Never a raw path.
 */
export function operationLabel(c: Context<AppEnv>): string | undefined {
  const declared = c.get('operation');
  if (declared) return declared;
  const path = c.req.path;
  if (path in FIXED) return FIXED[path];
  return 'unmatched';
}
