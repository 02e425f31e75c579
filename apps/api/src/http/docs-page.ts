import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Hono } from 'hono';
import type { AppEnv } from './env.js';

/**
 * The API reference page: Swagger UI rendering /api/v1/openapi.json, served from swagger-ui-dist's own files (no CDN:
 * it works offline). Like the document it is not an operation (not in MCP or the audit log). Only the fixed file
 * names below are served, so no path reaches anything else on disk.
 */
export const DOCS_PATH = '/api/v1/docs';
const ASSETS = `${DOCS_PATH}/assets`;

/** Our own start-up script (a file, not inline: the page needs no 'unsafe-inline' script policy). */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: 'StandaloneLayout',
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference — Workspace Data and Automation Service</title>
<link rel="stylesheet" href="${ASSETS}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<noscript>The reference needs JavaScript; the document itself is <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</noscript>
<script src="${ASSETS}/swagger-ui-bundle.js"></script>
<script src="${ASSETS}/swagger-ui-standalone-preset.js"></script>
<script src="${ASSETS}/init.js"></script>
</body>
</html>
`;

/** The files served under /api/v1/docs/assets/: swagger-ui-dist's, by name, and our start-up script. */
const DIST_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
};
export const DOCS_ASSETS = [...Object.keys(DIST_FILES), 'init.js'] as const;

/** swagger-ui-dist's directory (its getAbsoluteFSPath, without loading the bundle into this process). */
const distDir = (): string => (createRequire(import.meta.url)('swagger-ui-dist/absolute-path.js') as () => string)();

/** The assets are read once, on first request, and kept (about 1.5 MB). */
let loaded: Promise<Map<string, { body: Uint8Array | string; type: string }>> | undefined;
function assets() {
  loaded ??= (async () => {
    const dir = distDir();
    const map = new Map<string, { body: Uint8Array | string; type: string }>();
    for (const [name, type] of Object.entries(DIST_FILES)) map.set(name, { body: new Uint8Array(await readFile(join(dir, name))), type });
    map.set('init.js', { body: INIT_SCRIPT, type: 'text/javascript; charset=utf-8' });
    return map;
  })();
  loaded.catch(() => {
    loaded = undefined;
  });
  return loaded;
}

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

export function mountDocsPage(app: Hono<AppEnv>): void {
  app.get(DOCS_PATH, (c) => c.html(PAGE, 200, { ...SECURITY_HEADERS, 'cache-control': 'no-cache' }));
  app.get(`${ASSETS}/:file`, async (c) => {
    const name = c.req.param('file');
    // An allow-list of names: nothing else (no path, no other file of the package) is ever read.
    if (!Object.hasOwn(DIST_FILES, name) && name !== 'init.js') return c.notFound();
    const asset = (await assets()).get(name);
    if (!asset) return c.notFound();
    return c.body(asset.body as never, 200, {
      ...SECURITY_HEADERS,
      'content-type': asset.type,
      // swagger-ui-dist is pinned: its files change only with a release of this service.
      'cache-control': 'public, max-age=86400',
    });
  });
}
