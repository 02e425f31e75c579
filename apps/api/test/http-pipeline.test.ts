import { TrieRouter } from 'hono/router/trie-router';
import { MemoRouter } from '../src/http/memo-router.js';
import { createLogger, unredacted } from '../src/logger.js';
import { describe, expect, test } from './support.js';

/**
 * What every request goes through before and after its handler (issue 16 made it cheaper): the route match, the
 * request id, the log line, the header checks. The behaviour asserted here is the one from before that work.
 */
describe('request pipeline', () => {
  test('routes answer by their own path and method, however often a path is matched', async ({ h, owner }) => {
    const a = await h.workspace(owner.token, 'memo-a');
    const b = await h.workspace(owner.token, 'memo-b');
    for (let i = 0; i < 3; i++) {
      for (const ws of [a, b]) {
        const r = await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: owner.token });
        expect([r.status, r.body.id, r.body.name]).toEqual([200, ws.id, ws.name]);
      }
      const wrong = await h.call('PUT', `/api/v1/workspaces/${a.id}/sql`, { token: owner.token });
      expect([wrong.status, wrong.body.code, wrong.headers.get('allow')]).toEqual([405, 'METHOD_NOT_ALLOWED', 'POST']);
      expect((await h.call('GET', '/api/v1/nope')).status).toBe(404);
    }
    // A path far longer than any route is still matched (it is only not remembered).
    const long = await h.call('GET', `/api/v1/workspaces/${'a'.repeat(400)}`, { token: owner.token });
    expect([long.status, long.body.code]).toEqual([404, 'NOT_FOUND']);
  });

  test("a caller's X-Request-Id is kept when it is 1-255 word characters, - or =; else the id is a fresh UUID", async ({ h }) => {
    const idOf = async (given?: string) =>
      (await h.call('GET', '/healthz', given === undefined ? {} : { headers: { 'x-request-id': given } })).headers.get('x-request-id');
    expect(await idOf('trace-1=abc_DEF')).toBe('trace-1=abc_DEF');
    expect(await idOf('x'.repeat(255))).toBe('x'.repeat(255));
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    for (const bad of [undefined, '', 'x'.repeat(256), 'a b', "req-1'); DELETE", 'é']) expect(await idOf(bad)).toMatch(uuid);
    expect(await idOf()).not.toBe(await idOf());
  });

  test('one log line per request, with its id, method, path, status, time and user', async ({ h, owner }) => {
    const lines: string[] = [];
    const saved = h.services.logger;
    h.services.logger = createLogger('info', { write: (s: string) => void lines.push(s) });
    try {
      await h.call('GET', '/api/v1/auth/me', { token: owner.token, headers: { 'x-request-id': 'line-test-1' } });
      await h.call('GET', '/api/v1/auth/me', { token: 'ses_wrong', headers: { 'x-request-id': 'line-test-2' } });
    } finally {
      h.services.logger = saved;
    }
    const [ok, refused] = lines.map((l) => JSON.parse(l));
    expect(Object.keys(ok)).toEqual(['level', 'time', 'req_id', 'method', 'path', 'status', 'ms', 'user_id', 'msg']);
    expect(ok).toMatchObject({ level: 30, req_id: 'line-test-1', method: 'GET', path: '/api/v1/auth/me', status: 200, user_id: owner.id, msg: 'request' });
    expect(typeof ok.ms).toBe('number');
    expect(Object.keys(refused)).toEqual(['level', 'time', 'req_id', 'method', 'path', 'status', 'ms', 'msg']);
    expect(refused).toMatchObject({ req_id: 'line-test-2', status: 401 });
  });

  test('header values Node holds (rawHeaders) are checked like any others: a NUL is 400 naming the header', async ({ h, owner }) => {
    const call = (rawHeaders: string[]) =>
      h.app.request('/api/v1/auth/me', { headers: { authorization: `Bearer ${owner.token}` } }, { incoming: { rawHeaders } });
    const bad = await call(['Authorization', `Bearer ${owner.token}`, 'X-Odd', 'a\u0000b']);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: 'header x-odd: must not contain the NUL character (\\u0000)' });
    const lone = await call(['X-Odd', 'a\uD800b']);
    expect(((await lone.json()) as { details: string }).details).toBe('header x-odd: must not contain an unpaired UTF-16 surrogate (\\uD800-\\uDFFF)');
    expect((await call(['Authorization', `Bearer ${owner.token}`, ':path', '/x'])).status).toBe(200);
  });
});

describe('unredacted logger', () => {
  test('writes the same line as the logger for fields that are never redacted; the logger still redacts', () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (s: string) => void lines.push(s) });
    const fields = { req_id: 'r1', method: 'POST', path: '/api/v1/x', status: 200, ms: 1.5, user_id: 'u1' };
    logger.info(fields, 'request');
    unredacted(logger).info(fields, 'request');
    const [a, b] = lines.map((l) => l.replace(/"time":\d+/, ''));
    expect(b).toBe(a);
    expect(unredacted(logger)).toBe(unredacted(logger));
    logger.info({ token: 'secret-1', headers: { authorization: 'secret-2' } }, 'x');
    expect(lines.at(-1)).not.toContain('secret-');
  });

  test('follows the level of its logger', () => {
    const lines: string[] = [];
    const logger = createLogger('warn', { write: (s: string) => void lines.push(s) });
    unredacted(logger).info({ a: 1 }, 'request');
    expect(lines).toEqual([]);
  });
});

describe('MemoRouter', () => {
  const router = () => {
    const r = new MemoRouter<string>(new TrieRouter());
    r.add('ALL', '*', 'mw');
    r.add('GET', '/a/:id', 'get-a');
    r.add('POST', '/a/:id', 'post-a');
    return r;
  };
  const handlers = (r: MemoRouter<string>, method: string, path: string) => r.match(method, path)[0].map(([handler, params]) => [handler, params]);

  test('the same answers as the router it wraps, per method and path', () => {
    const r = router();
    const plain = new TrieRouter<string>();
    plain.add('ALL', '*', 'mw');
    plain.add('GET', '/a/:id', 'get-a');
    plain.add('POST', '/a/:id', 'post-a');
    for (let i = 0; i < 2; i++) {
      for (const [m, p] of [['GET', '/a/1'], ['GET', '/a/2'], ['POST', '/a/1'], ['PUT', '/a/1'], ['GET', '/b']] as const) {
        expect(r.match(m, p)).toEqual(plain.match(m, p));
      }
    }
    expect(handlers(r, 'GET', '/a/7')).toEqual([['mw', {}], ['get-a', { id: '7' }]]);
  });

  test('remembers at most 1000 paths per method, and no long path', () => {
    const r = router();
    const first = r.match('GET', '/a/0');
    expect(r.match('GET', '/a/0')).toBe(first);
    for (let i = 1; i <= 1000; i++) r.match('GET', `/a/${i}`);
    // The oldest was forgotten: matched anew, to an equal result.
    const again = r.match('GET', '/a/0');
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    const long = `/a/${'x'.repeat(300)}`;
    expect(r.match('GET', long)).not.toBe(r.match('GET', long));
    expect(handlers(r, 'GET', long)).toEqual([['mw', {}], ['get-a', { id: 'x'.repeat(300) }]]);
  });
});
