import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Context, Hono } from 'hono';
import type { AppEnv } from './env.js';

/**
 * The console (apps/console, docs/console.md): its built files, served under /console/ by this process, and `GET /`
 * sends a browser there. Every /console/… path that is not an asset is the app's page (it routes in the browser).
 * Assets have content-hashed names, so they are cached for a year; the page is never cached. Only the files the
 * build wrote are served, by name: no path reaches anything else on disk. Off with CONSOLE_ENABLED=false.
 */
export const CONSOLE_PATH = '/console';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

export const CONSOLE_SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
};

interface Built {
  page: string;
  assets: Map<string, { body: Uint8Array; type: string }>;
}

/** The console's dist directory (a dependency of this app: turbo builds it first). */
const distDir = (): string => join(dirname(createRequire(import.meta.url).resolve('@wds/console/package.json')), 'dist');

let loaded: Promise<Built | undefined> | undefined;
/** Read once, on the first request, and kept (tens of KB). Undefined when the console was not built. */
function built(): Promise<Built | undefined> {
  loaded ??= (async () => {
    const dir = distDir();
    const page = await readFile(join(dir, 'index.html'), 'utf8').catch(() => undefined);
    if (page === undefined) return undefined;
    const assets = new Map<string, { body: Uint8Array; type: string }>();
    for (const name of await readdir(join(dir, 'assets')).catch(() => [] as string[])) {
      const type = TYPES[name.slice(name.lastIndexOf('.'))];
      if (type) assets.set(name, { body: new Uint8Array(await readFile(join(dir, 'assets', name))), type });
    }
    return { page, assets };
  })();
  return loaded;
}

export function mountConsole(app: Hono<AppEnv>, enabled: boolean): void {
  if (!enabled) return;
  app.get('/', (c) => c.redirect(`${CONSOLE_PATH}/`, 302));
  app.get(`${CONSOLE_PATH}/assets/:file`, async (c) => {
    const asset = (await built())?.assets.get(c.req.param('file'));
    if (!asset) return c.notFound();
    return c.body(asset.body as never, 200, { ...CONSOLE_SECURITY_HEADERS, 'content-type': asset.type, 'cache-control': 'public, max-age=31536000, immutable' });
  });
  const page = async (c: Context<AppEnv>) => {
    const b = await built();
    if (!b) return c.json({ error: 'The console is not built', code: 'NOT_FOUND', details: 'run pnpm build' }, 404);
    return c.html(b.page, 200, { ...CONSOLE_SECURITY_HEADERS, 'cache-control': 'no-store' });
  };
  app.get(CONSOLE_PATH, page);
  app.get(`${CONSOLE_PATH}/*`, page);
}
