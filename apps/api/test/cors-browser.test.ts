import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHROMIUM_LOOPBACK_ARGS, chromiumPath } from '@wds/testkit';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './support.js';

/**
 * A real browser calling the API from a page on another origin (docs/http-api.md#browser-access-cors): Debian's
 * chromium, headless, installed by scripts/browser.sh when missing. Two page servers on their own ports (so their
 * own origins): one listed in CORS_ORIGINS, one not. Everything stays on 127.0.0.1.
 */

/** The page: a custom frontend's call with its Bearer token and workspace header. */
const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>frontend</title>
<script>
  window.callApi = async ({ url, token, workspace, sql }) => {
    try {
      const res = await fetch(url, {
        method: sql === undefined ? 'GET' : 'POST',
        headers: {
          Authorization: 'Bearer ' + token,
          'X-Workspace-ID': workspace,
          ...(sql === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: sql === undefined ? undefined : JSON.stringify({ sql }),
      });
      return { status: res.status, requestId: res.headers.get('X-Request-Id'), body: await res.json() };
    } catch (err) {
      return { error: err.name + ': ' + err.message };
    }
  };
</script>`;

interface CallResult {
  status?: number;
  requestId?: string | null;
  body?: any;
  error?: string;
}

function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })),
  );
}

const close = (server: Server | undefined) =>
  new Promise<void>((resolve) => {
    if (!server) return resolve();
    server.closeAllConnections();
    server.close(() => resolve());
  });

let h: Harness;
let api: string;
let browser: Browser;
let allowed: { server: Server; origin: string };
let denied: { server: Server; origin: string };
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string; name: string };

beforeAll(async () => {
  // Found (or installed) while the pages and the database are being set up.
  const executable = chromiumPath();
  [allowed, denied] = await Promise.all([pageServer(), pageServer()]);
  h = await Harness.create({ CORS_ORIGINS: `https://app.example.com, ${allowed.origin}` });
  api = await h.listen();
  owner = await h.user('browser');
  ws = await h.workspace(owner.token, 'Browser');
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (body text)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
  browser = await chromium.launch({ executablePath: await executable, headless: true, args: [...CHROMIUM_LOOPBACK_ARGS] });
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([close(allowed?.server), close(denied?.server)]);
  await h?.close();
});

/** Opens the page served from `origin` and runs one fetch of the API from it. */
async function fromPage(origin: string, call: { path: string; sql?: string }): Promise<CallResult> {
  const page = await browser.newPage();
  try {
    await page.goto(`${origin}/`);
    // Runs in the page, where the page's script defined callApi on its global object.
    return await page.evaluate((args) => (globalThis as unknown as { callApi(a: unknown): Promise<CallResult> }).callApi(args), {
      url: api + call.path,
      token: owner.token,
      workspace: ws.id,
      sql: call.sql,
    });
  } finally {
    await page.close();
  }
}

describe('a page on another origin', () => {
  it('listed in CORS_ORIGINS: authenticated calls succeed, and the page reads the body, X-Request-Id and errors', async () => {
    const listed = await fromPage(allowed.origin, { path: '/api/v1/workspaces' });
    expect(listed.error).toBeUndefined();
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect((listed.body as { id: string }[]).map((w) => w.id)).toContain(ws.id);
    expect(listed.requestId).toMatch(/^[0-9a-f-]{36}$/);

    const written = await fromPage(allowed.origin, { path: `/api/v1/workspaces/${ws.id}/sql`, sql: "INSERT INTO notes (body) VALUES ('from the page')" });
    expect(written.error).toBeUndefined();
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    expect(written.body.affected_rows).toBe(1);
    expect(written.requestId).toBeTruthy();

    // An error answer is readable too (the envelope and its request id), not an opaque CORS failure.
    const failed = await fromPage(allowed.origin, { path: `/api/v1/workspaces/${ws.id}/sql`, sql: 'SELEC nonsense' });
    expect(failed.error).toBeUndefined();
    expect(failed.status).toBe(400);
    expect(failed.body.code).toBeTruthy();
    expect(failed.requestId).toBeTruthy();
  });

  it('not listed: the browser refuses (TypeError in fetch), and the request itself is never sent', async () => {
    const listed = await fromPage(denied.origin, { path: '/api/v1/workspaces' });
    expect(listed.status).toBeUndefined();
    expect(listed.error).toMatch(/^TypeError: /);

    const written = await fromPage(denied.origin, { path: `/api/v1/workspaces/${ws.id}/sql`, sql: "INSERT INTO notes (body) VALUES ('denied')" });
    expect(written.error).toMatch(/^TypeError: /);
    // The preflight failed, so the POST never reached the API.
    const rows = await h.sqlOk(owner.token, ws.id, "SELECT count(*)::int AS n FROM notes WHERE body = 'denied'");
    expect(JSON.stringify(rows)).toContain('"n":0');
  });
});
