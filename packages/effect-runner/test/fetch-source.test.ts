/**
 * fetchSource against HTTP servers on 127.0.0.1; refusals target a listener on 127.0.0.2 that must stay untouched.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EffectError, FETCH_MAX_BYTES, FETCH_MAX_TIMEOUT_MS, type FetchSpec, fetchSource } from '../src/index.js';
import { loopbackGuard, startServer, type TestServer } from './servers.js';

const servers: TestServer[] = [];
async function server(...args: Parameters<typeof startServer>): Promise<TestServer> {
  const s = await startServer(...args);
  servers.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function failure(promise: Promise<unknown>): Promise<EffectError> {
  const err = await promise.then(
    () => {
      throw new Error('expected the fetch to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EffectError);
  return err as EffectError;
}

describe('fetchSource', () => {
  it('has the documented caps', () => {
    expect(FETCH_MAX_BYTES).toBe(5 * 1024 * 1024);
    expect(FETCH_MAX_TIMEOUT_MS).toBe(60_000);
  });

  it('returns a JSON body parsed and a text body as text', async () => {
    const target = await server((req, res) => {
      if (req.url === '/json') res.writeHead(200, { 'content-type': 'application/vnd.api+json; charset=utf-8' }).end('{"rates":[1,2]}');
      else res.writeHead(200, { 'content-type': 'text/csv' }).end('a,b\n1,2\n');
    });
    const guard = loopbackGuard();
    expect(await fetchSource({ url: `${target.origin}/json` }, { guard })).toMatchObject({ status: 200, body: { rates: [1, 2] } });
    const csv = await fetchSource({ url: `${target.origin}/csv` }, { guard });
    expect(csv.body).toBe('a,b\n1,2\n');
    expect(csv.headers['content-type']).toBe('text/csv');
  });

  it('sends the method, headers and a JSON or text body', async () => {
    const target = await server();
    const guard = loopbackGuard();
    await fetchSource({ url: `${target.origin}/q?x=1`, method: 'post', headers: { 'X-Api-Key': 'k1' }, body: { q: 'all' } }, { guard });
    await fetchSource({ url: target.origin, method: 'PUT', body: 'raw text' }, { guard });
    expect(target.requests.map((r) => [r.method, r.url, r.headers['x-api-key'], r.headers['content-type'], r.body])).toEqual([
      ['POST', '/q?x=1', 'k1', 'application/json', '{"q":"all"}'],
      ['PUT', '/', undefined, 'text/plain; charset=utf-8', 'raw text'],
    ]);
  });

  it('throws http_status with the status on a non-2xx answer', async () => {
    const target = await server((_req, res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such rate"}'));
    const err = await failure(fetchSource({ url: target.origin }, { guard: loopbackGuard() }));
    expect(err.kind).toBe('http_status');
    expect(err.status).toBe(404);
    expect(err.details).toContain('no such rate');
  });

  it('does not follow a redirect to a forbidden listener', async () => {
    const forbidden = await server(undefined, '127.0.0.2');
    const target = await server((_req, res) => res.writeHead(302, { location: `${forbidden.origin}/secret` }).end());
    const err = await failure(fetchSource({ url: target.origin }, { guard: loopbackGuard() }));
    expect(err.kind).toBe('http_status');
    expect(err.status).toBe(302);
    expect(forbidden.connections).toBe(0);
  });

  it('caps the response size', async () => {
    const target = await server((_req, res) => res.end('y'.repeat(5000)));
    const err = await failure(fetchSource({ url: target.origin }, { guard: loopbackGuard(), maxBytes: 4096 }));
    expect(err.kind).toBe('too_large');
  });

  it('caps the timeout: timeout_secs cannot raise it above the maximum', async () => {
    const target = await server(() => {
      // never answer
    });
    const err = await failure(fetchSource({ url: target.origin, timeout_secs: 30 }, { guard: loopbackGuard(), maxTimeoutMs: 150 }));
    expect(err.kind).toBe('timeout');
    expect(err.message).toContain('within 150 ms'); // the maximum, not the 30 s asked for
  });

  it('a shorter timeout_secs applies', async () => {
    const target = await server(() => {
      // never answer
    });
    const err = await failure(fetchSource({ url: target.origin, timeout_secs: 0.1 }, { guard: loopbackGuard() }));
    expect(err.kind).toBe('timeout');
  });

  it('refuses forbidden targets by IP and by name before connecting', async () => {
    const forbidden = await server(undefined, '127.0.0.2');
    const guard = loopbackGuard({ 'internal.test': ['127.0.0.2'] });
    expect((await failure(fetchSource({ url: forbidden.origin }, { guard }))).kind).toBe('refused');
    expect((await failure(fetchSource({ url: `http://internal.test:${forbidden.port}/` }, { guard }))).kind).toBe('refused');
    expect(forbidden.connections).toBe(0);
  });

  it('rejects invalid definitions', async () => {
    const guard = loopbackGuard();
    const specs: FetchSpec[] = [
      { url: 'file:///etc/passwd' },
      { url: 'not a url' },
      { url: 'http://127.0.0.1:1/', method: 'TRACE' },
      { url: 'http://127.0.0.1:1/', headers: { Host: 'evil.test' } },
      { url: 'http://127.0.0.1:1/', headers: { 'X-Bad': 'a\nb' } },
      { url: 'http://127.0.0.1:1/', body: { a: 1 } },
      { url: 'http://127.0.0.1:1/', timeout_secs: -1 },
    ];
    for (const spec of specs) {
      expect((await failure(fetchSource(spec, { guard }))).kind).toBe('invalid');
    }
  });
});
