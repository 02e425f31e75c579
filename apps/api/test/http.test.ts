import { ADMIN_TOKEN, describe, expect, test } from './support.js';

describe('HTTP conventions', () => {
  test('unknown route → 404 envelope', async ({ h }) => {
    const r = await h.call('GET', '/api/v1/nope');
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: 'NOT_FOUND', error: 'Route not found' });
  });

  test('wrong method → 405 envelope with Allow', async ({ h, owner }) => {
    const r = await h.call('PUT', '/api/v1/workspaces', { token: owner.token });
    expect(r.status).toBe(405);
    expect(r.body.code).toBe('METHOD_NOT_ALLOWED');
    expect(r.headers.get('allow')).toBe('GET, POST');
  });

  test('malformed JSON → 400 envelope', async ({ h, owner }) => {
    const r = await h.call('POST', '/api/v1/workspaces', {
      token: owner.token,
      rawBody: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'Malformed JSON body', code: 'BAD_REQUEST' });
  });

  test('oversize body → 413 envelope', async ({ h, owner }) => {
    const r = await h.call('POST', '/api/v1/workspaces', {
      token: owner.token,
      rawBody: JSON.stringify({ name: 'x'.repeat(h.services.config.MAX_BODY_BYTES) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('PAYLOAD_TOO_LARGE');
    // The admin interface has the same limit.
    const admin = await h.call('POST', '/admin/v1/users', {
      rawBody: JSON.stringify({ email: 'big@example.com', name: 'x'.repeat(h.services.config.MAX_BODY_BYTES) }),
      headers: { 'content-type': 'application/json', 'x-admin-token': ADMIN_TOKEN },
    });
    expect(admin.status).toBe(413);
  });

  test('over real HTTP: a declared length over the limit is 413 before the body is read; a chunked one is counted', async ({ base, h, owner }) => {
    const big = JSON.stringify({ name: 'x'.repeat(h.services.config.MAX_BODY_BYTES) });
    const headers = { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' };
    const declared = await fetch(`${base}/api/v1/workspaces`, { method: 'POST', headers, body: big });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { code: string }).code).toBe('PAYLOAD_TOO_LARGE');
    const bytes = new TextEncoder().encode(big);
    const chunked = await fetch(`${base}/api/v1/workspaces`, {
      method: 'POST',
      headers,
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 65536) controller.enqueue(bytes.subarray(i, i + 65536));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    // Within the limit both ways work.
    const ok = await fetch(`${base}/api/v1/workspaces`, { method: 'POST', headers, body: JSON.stringify({ name: 'small' }) });
    expect(ok.status).toBe(201);
  });

  test('a JSON body that is not an object is a validation error, not a 500', async ({ h, owner }) => {
    for (const raw of ['[]', '"x"', '42', 'null']) {
      const r = await h.call('POST', '/api/v1/workspaces', { token: owner.token, rawBody: raw });
      expect(r.status, raw).toBe(400);
    }
  });

  test('health and readiness', async ({ h }) => {
    expect((await h.call('GET', '/healthz')).body).toEqual({ status: 'ok' });
    expect((await h.call('GET', '/readyz')).body).toEqual({ status: 'ok' });
  });

  test('every response carries a request id', async ({ h }) => {
    const r = await h.call('GET', '/healthz');
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });

  test('OpenAPI document describes request bodies from the validation schemas', async ({ h }) => {
    const r = await h.call('GET', '/api/v1/openapi.json');
    const post = r.body.paths['/api/v1/workspaces/{id}/members'].post;
    expect(post.requestBody.content['application/json'].schema.properties.role.enum).toEqual(['admin', 'member']);
  });
});
