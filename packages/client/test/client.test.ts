// The client's own behaviour against a real HTTP server on 127.0.0.1 that answers like the service does: the data of
// a success, nothing for a 204, an ApiError for the error envelope and for an answer that is not one. The whole
// client against the real service: apps/api/test/client.test.ts.
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ApiError, createWdsClient, ok } from '../src/index.js';

let server: Server;
let baseUrl: string;
const seen: { method?: string; url?: string; authorization?: string; workspace?: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization, workspace: req.headers['x-workspace-id'] as string | undefined });
    res.setHeader('x-request-id', 'req-1');
    if (req.url === '/api/v1/auth/me') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: '00000000-0000-4000-8000-000000000001', email: 'ada@example.test', name: 'Ada' }));
    } else if (req.method === 'DELETE') {
      res.statusCode = 204;
      res.end();
    } else if (req.url?.startsWith('/api/v1/workspaces/')) {
      res.statusCode = 404;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ error: 'Workspace not found', code: 'NOT_FOUND', details: 'or not yours' }));
    } else {
      res.statusCode = 502;
      res.setHeader('content-type', 'text/html');
      res.end('<html>bad gateway</html>');
    }
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));

describe('createWdsClient and ok', () => {
  test('the data of a success; the token as a Bearer header; a trailing slash of the base URL is no double slash', async () => {
    const api = createWdsClient({ baseUrl: `${baseUrl}/`, token: 'ses_abc', headers: { 'X-Workspace-ID': 'w' } });
    const me = await ok(api.GET('/api/v1/auth/me'));
    expect(me.name).toBe('Ada');
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/api/v1/auth/me', authorization: 'Bearer ses_abc', workspace: 'w' });
  });

  test('a 204 is undefined', async () => {
    const api = createWdsClient({ baseUrl });
    const id = '00000000-0000-4000-8000-000000000002';
    await expect(ok(api.DELETE('/api/v1/workspaces/{id}', { params: { path: { id } } }))).resolves.toBeUndefined();
    expect(seen.at(-1)?.authorization).toBeUndefined();
  });

  test('the error envelope is an ApiError with status, code, details and request id', async () => {
    const api = createWdsClient({ baseUrl, token: 't' });
    const id = '00000000-0000-4000-8000-000000000003';
    const err = await ok(api.GET('/api/v1/workspaces/{id}', { params: { path: { id } } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: 'NOT_FOUND', details: 'or not yours', requestId: 'req-1' });
    expect((err as Error).message).toBe('404 NOT_FOUND: Workspace not found (or not yours)');
  });

  test('an answer that is not the envelope (a proxy page) is an ApiError without a code', async () => {
    const api = createWdsClient({ baseUrl });
    const err = await ok(api.GET('/healthz')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 502, code: undefined, body: '<html>bad gateway</html>' });
  });
});
