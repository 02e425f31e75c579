/**
 * runEffect end to end against HTTP servers on 127.0.0.1. Refusals target a listener on 127.0.0.2 (loopback,
 * outside the allowlist) that must receive no connection, so a broken guard fails the test without reaching
 * anything off this machine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EffectError, type EffectSpec, type FieldMapping, mappingsFromObject, OutboundGuard, runEffect } from '../src/index.js';
import { loopbackGuard, startServer, stubResolver, type TestServer } from './servers.js';

const v = (value: string, target: string): FieldMapping => ({ source: { type: 'Variable', value }, target });
const c = (value: string, target: string): FieldMapping => ({ source: { type: 'Const', value }, target });

const servers: TestServer[] = [];
async function server(...args: Parameters<typeof startServer>): Promise<TestServer> {
  const s = await startServer(...args);
  servers.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function spec(url: string, extra: Partial<EffectSpec> = {}): EffectSpec {
  return { url, method: 'POST', header_mappings: [], body_mappings: [], ...extra };
}

async function failure(promise: Promise<unknown>): Promise<EffectError> {
  const err = await promise.then(
    () => {
      throw new Error('expected the effect to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EffectError);
  return err as EffectError;
}

const json = (status: number, body: unknown) => (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const input = {
  customer: { email: 'ada@example.com', tier: 3 },
  items: [{ id: 'sku-1' }, { id: 'sku-2' }],
  note: 'hello world & more',
};

describe('runEffect mappings', () => {
  it('sends mapped headers, query parameters and a nested JSON body', async () => {
    const target = await server(json(201, { created: true }));
    const guard = loopbackGuard();
    const result = await runEffect(
      spec(`${target.origin}/orders?existing=1`, {
        header_mappings: [v('customer.email', 'X-Customer'), v('$.customer.tier', 'X-Tier'), c('static', 'X-Const'), v('$.nope', 'X-Missing'), v('items', 'X-Items')],
        query_mappings: [v('$.items[1].id', 'sku'), v('note', 'note'), c('yes', 'flag'), v('nope', 'missing')],
        body_mappings: [v('$.customer.email', 'customer.email'), v('customer.tier', 'customer.tier'), v('items[0].id', 'first'), c('web', 'meta.channel'), v('nope', 'meta.missing'), v('$.customer', 'copy')],
      }),
      input,
      { guard },
    );
    expect(result).toMatchObject({ status: 201, ok: true, body: { created: true }, attempts: 1 });
    expect(result.headers['content-type']).toBe('application/json');
    expect(result.idempotency_key).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.duration_ms).toBeGreaterThanOrEqual(0);

    const [received] = target.requests;
    expect(received!.method).toBe('POST');
    const url = new URL(received!.url, target.origin);
    expect(url.pathname).toBe('/orders');
    expect([...url.searchParams]).toEqual([
      ['existing', '1'],
      ['sku', 'sku-2'],
      ['note', 'hello world & more'],
      ['flag', 'yes'],
    ]);
    expect(received!.headers).toMatchObject({
      'x-customer': 'ada@example.com',
      'x-tier': '3',
      'x-const': 'static',
      'x-items': '[{"id":"sku-1"},{"id":"sku-2"}]',
      'content-type': 'application/json',
      'idempotency-key': result.idempotency_key,
      host: `127.0.0.1:${target.port}`,
    });
    expect(received!.headers).not.toHaveProperty('x-missing');
    expect(JSON.parse(received!.body)).toEqual({
      customer: { email: 'ada@example.com', tier: 3 },
      first: 'sku-1',
      meta: { channel: 'web', missing: null },
      copy: input.customer,
    });
  });

  it('sends no body for GET and an empty object for a POST without body mappings', async () => {
    const target = await server();
    const guard = loopbackGuard();
    await runEffect(spec(target.origin, { method: 'get' }), input, { guard });
    await runEffect(spec(target.origin), input, { guard });
    expect(target.requests.map((r) => [r.method, r.body, r.headers['content-type']])).toEqual([
      ['GET', '', undefined],
      ['POST', '{}', 'application/json'],
    ]);
  });

  it('returns text bodies as text, invalid JSON as text and empty bodies as null', async () => {
    const target = await server((req, res) => {
      if (req.url === '/text') res.end('plain words');
      else if (req.url === '/broken') res.writeHead(200, { 'content-type': 'application/json' }).end('{nope');
      else res.writeHead(204).end();
    });
    const guard = loopbackGuard();
    expect((await runEffect(spec(`${target.origin}/text`), {}, { guard })).body).toBe('plain words');
    expect((await runEffect(spec(`${target.origin}/broken`), {}, { guard })).body).toBe('{nope');
    expect(await runEffect(spec(`${target.origin}/empty`), {}, { guard })).toMatchObject({ status: 204, body: null });
  });

  it('rejects a mapped header value that cannot be sent, before any attempt', async () => {
    const target = await server();
    const err = await failure(runEffect(spec(target.origin, { header_mappings: [v('bad', 'X-Bad')] }), { bad: 'a\r\nInjected: 1' }, { guard: loopbackGuard() }));
    expect(err.kind).toBe('invalid');
    expect(target.connections).toBe(0);
  });

  it('refuses an invalid spec without trying (reserved header, bad retries)', async () => {
    const target = await server();
    const err = await failure(
      runEffect(spec(target.origin, { header_mappings: [c('x', 'Idempotency-Key')], retries: 9 }), {}, { guard: loopbackGuard() }),
    );
    expect(err.kind).toBe('invalid');
    expect(err.attempts).toBe(0);
    expect(err.details).toContain('retries');
    expect(target.connections).toBe(0);
  });
});

describe('an effect written for the origin platform', () => {
  it('object mappings and "$.input.message": a Slack-style hook receives the mapped value as text', async () => {
    const hook = await server(json(200, { ok: true }));
    // As the origin writes it: header and body mappings as objects; the body addresses the step input as $.input.…
    const slack = spec(`${hook.origin}/services/T000/B000/XXXX`, {
      header_mappings: mappingsFromObject({ 'Content-Type': 'application/json' }),
      body_mappings: mappingsFromObject({ text: '$.input.message', channel: '#sales', unfurl_links: false, echo: '$.message' }),
    });
    const summary = { totals: { revenue: 1200, transaction_count: 3 }, group_by: 'product' };
    const result = await runEffect(slack, { message: summary }, { guard: loopbackGuard() });
    expect(result.status).toBe(200);
    const [received] = hook.requests;
    expect(received!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(received!.body)).toEqual({ text: summary, channel: '#sales', unfurl_links: false, echo: summary });
  });
});

describe('runEffect statuses and retries', () => {
  it('returns 4xx and 5xx responses with their status', async () => {
    const target = await server((req, res) => json(req.url === '/missing' ? 404 : 500, { error: req.url })(req, res));
    const guard = loopbackGuard();
    expect(await runEffect(spec(`${target.origin}/missing`, { retries: 3 }), {}, { guard })).toMatchObject({ status: 404, ok: false, body: { error: '/missing' }, attempts: 1 });
    expect(await runEffect(spec(`${target.origin}/boom`, { retries: 3 }), {}, { guard })).toMatchObject({ status: 500, ok: false, attempts: 1 });
  });

  it('does not retry a 400', async () => {
    const target = await server(json(400, { error: 'bad' }));
    const result = await runEffect(spec(target.origin, { retries: 5 }), {}, { guard: loopbackGuard(), backoffMs: 1 });
    expect(result).toMatchObject({ status: 400, attempts: 1 });
    expect(target.requests).toHaveLength(1);
  });

  it('retries a 503 and succeeds, every attempt carrying the same Idempotency-Key', async () => {
    const target = await server((req, res, i) => (i < 2 ? json(503, { try: i })(req, res) : json(200, { done: true })(req, res)));
    const result = await runEffect(spec(target.origin, { retries: 3 }), {}, { guard: loopbackGuard(), backoffMs: 5 });
    expect(result).toMatchObject({ status: 200, ok: true, body: { done: true }, attempts: 3 });
    const keys = target.requests.map((r) => r.headers['idempotency-key']);
    expect(keys).toEqual([result.idempotency_key, result.idempotency_key, result.idempotency_key]);
  });

  it("uses the caller's Idempotency-Key and a fresh one per call otherwise", async () => {
    const target = await server();
    const guard = loopbackGuard();
    const given = await runEffect(spec(target.origin), {}, { guard, idempotencyKey: 'run-42-step-3' });
    const a = await runEffect(spec(target.origin), {}, { guard });
    const b = await runEffect(spec(target.origin), {}, { guard });
    expect(given.idempotency_key).toBe('run-42-step-3');
    expect(target.requests.map((r) => r.headers['idempotency-key'])).toEqual(['run-42-step-3', a.idempotency_key, b.idempotency_key]);
    expect(a.idempotency_key).not.toBe(b.idempotency_key);
  });

  it('retries 429, 502 and 504 (honouring Retry-After) and returns the last status when retries run out', async () => {
    const statuses = [429, 502, 504, 503];
    const target = await server((_req, res, i) => res.writeHead(statuses[i]!, i === 0 ? { 'retry-after': '0' } : {}).end());
    const result = await runEffect(spec(target.origin, { retries: 3 }), {}, { guard: loopbackGuard(), backoffMs: 1 });
    expect(result).toMatchObject({ status: 503, ok: false, attempts: 4 });
    expect(target.requests).toHaveLength(4);
  });

  it('retries network errors and reports the attempts', async () => {
    const closed = await startServer();
    const origin = closed.origin;
    await closed.close();
    const err = await failure(runEffect(spec(origin, { retries: 2 }), {}, { guard: loopbackGuard(), backoffMs: 1 }));
    expect(err.kind).toBe('network');
    expect(err.attempts).toBe(3);
  });

  it('times out quickly on a server that never answers, and retries timeouts', async () => {
    const target = await server(() => {
      // never answer
    });
    const err = await failure(runEffect(spec(target.origin, { retries: 1 }), {}, { guard: loopbackGuard(), defaultTimeoutMs: 150, backoffMs: 1 }));
    expect(err.kind).toBe('timeout');
    expect(err.message).toContain('within 150 ms'); // the given deadline, not a default
    expect(err.attempts).toBe(2);
    expect(target.requests).toHaveLength(2);
  });

  it('the timeout covers a slow name resolution', async () => {
    const target = await server();
    // The name resolves only once the call has timed out.
    let resolved!: (addresses: { address: string; family: 4 | 6 }[]) => void;
    const guard = new OutboundGuard({
      allowlist: ['127.0.0.1'],
      resolver: () => new Promise((resolve) => (resolved = resolve)),
    });
    const err = await failure(runEffect(spec(`http://slow.test:${target.port}/`), {}, { guard, defaultTimeoutMs: 100 }));
    expect(err.kind).toBe('timeout');
    resolved([{ address: '127.0.0.1', family: 4 }]);
    // A connection of our own, opened after the late answer was handed back: only it reaches the server.
    expect((await fetch(target.origin)).status).toBe(200);
    expect(target.connections).toBe(1);
  });

  it('times out on a body that never ends', async () => {
    const target = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    const err = await failure(runEffect(spec(target.origin), {}, { guard: loopbackGuard(), defaultTimeoutMs: 150 }));
    expect(err.kind).toBe('timeout');
  });

  it('stops when the signal fires, also between attempts', async () => {
    const target = await server(json(503, {}));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const err = await failure(runEffect(spec(target.origin, { retries: 5 }), {}, { guard: loopbackGuard(), backoffMs: 10_000, signal: controller.signal }));
    expect(err.kind).toBe('network');
    expect(err.message).toContain('cancelled');
    expect(err.attempts).toBe(1);
  });
});

describe('runEffect limits', () => {
  it('aborts a response over the size cap (declared and streamed)', async () => {
    const target = await server((req, res) => {
      if (req.url === '/declared') {
        res.end('x'.repeat(2000));
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('x'.repeat(600), () => res.end('x'.repeat(600))); // two chunks, no declared length
      }
    });
    const guard = loopbackGuard();
    for (const path of ['/declared', '/streamed']) {
      const err = await failure(runEffect(spec(`${target.origin}${path}`, { retries: 2 }), {}, { guard, maxResponseBytes: 1000, backoffMs: 1 }));
      expect(err.kind).toBe('too_large');
      expect(err.attempts).toBe(1);
    }
    expect((await runEffect(spec(`${target.origin}/declared`), {}, { guard, maxResponseBytes: 2000 })).body).toHaveLength(2000);
  });

  it('returns a redirect without following it', async () => {
    const elsewhere = await server(undefined, '127.0.0.2');
    const target = await server((_req, res) => res.writeHead(302, { location: `${elsewhere.origin}/internal` }).end());
    const result = await runEffect(spec(target.origin, { retries: 2 }), {}, { guard: loopbackGuard() });
    expect(result).toMatchObject({ status: 302, ok: false, attempts: 1 });
    expect(result.headers.location).toBe(`${elsewhere.origin}/internal`);
    expect(elsewhere.connections).toBe(0);
  });
});

describe('runEffect SSRF guard', () => {
  it('refuses a loopback address outside the allowlist, by IP and by name, without retrying', async () => {
    const forbidden = await server(undefined, '127.0.0.2');
    const guard = loopbackGuard({ 'internal.test': ['127.0.0.2'] });
    for (const url of [forbidden.origin, `http://internal.test:${forbidden.port}/`, `http://[::ffff:127.0.0.2]:${forbidden.port}/`]) {
      const err = await failure(runEffect(spec(url, { retries: 3 }), {}, { guard, backoffMs: 1 }));
      expect(err.kind).toBe('refused');
      expect(err.attempts).toBe(1);
    }
    expect(forbidden.connections).toBe(0);
  });

  it('refuses loopback when there is no allowlist', async () => {
    const target = await server();
    const err = await failure(runEffect(spec(target.origin), {}, { guard: new OutboundGuard({ resolver: stubResolver({}) }) }));
    expect(err.kind).toBe('refused');
    expect(target.connections).toBe(0);
  });

  it('refuses a name resolving to an allowed and a forbidden address', async () => {
    const allowed = await server();
    const forbidden = await server(undefined, '127.0.0.2');
    const guard = loopbackGuard({ 'split.test': ['127.0.0.1', '127.0.0.2'] });
    const err = await failure(runEffect(spec(`http://split.test:${allowed.port}/`), {}, { guard }));
    expect(err.kind).toBe('refused');
    expect(allowed.connections + forbidden.connections).toBe(0);
  });

  it('resolves again on every connection (a name rebound to a forbidden address between attempts is refused)', async () => {
    const allowed = await server(json(503, {}));
    const forbidden = await server(undefined, '127.0.0.2');
    let calls = 0;
    const guard = new OutboundGuard({
      allowlist: ['127.0.0.1'],
      resolver: async () => [{ address: calls++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }],
    });
    // The first attempt reaches 127.0.0.1 (503); the retry's connection resolves the name again and gets 127.0.0.2.
    const err = await failure(runEffect(spec(`http://rebind.test:${allowed.port}/`, { retries: 2 }), {}, { guard, backoffMs: 1 }));
    expect(err.kind).toBe('refused');
    expect(err.attempts).toBe(2);
    expect(calls).toBe(2);
    expect(allowed.requests).toHaveLength(1);
    expect(forbidden.connections).toBe(0);
  });

  it('allows a loopback target by CIDR and by host name (the Host header keeps the name)', async () => {
    const target = await server();
    const byCidr = new OutboundGuard({ allowlist: ['127.0.0.0/30'], resolver: stubResolver({}) });
    expect((await runEffect(spec(target.origin), {}, { guard: byCidr })).status).toBe(200);
    const byName = new OutboundGuard({ allowlist: ['api.test'], resolver: stubResolver({ 'api.test': ['127.0.0.1'] }) });
    expect((await runEffect(spec(`http://API.test:${target.port}/x`), {}, { guard: byName })).status).toBe(200);
    expect(target.requests[1]!.headers.host).toBe(`api.test:${target.port}`);
  });

  it('refuses URLs that are not http or https', async () => {
    const err = await failure(runEffect(spec('file:///etc/passwd'), {}, { guard: loopbackGuard() }));
    expect(err.kind).toBe('invalid');
  });
});
