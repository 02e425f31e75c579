import { vi } from 'vitest';
import { describe, expect, test } from './support.js';

describe('API keys', () => {
  test('create returns the key once; list shows metadata only; the key authenticates as its owner', async ({ h, owner }) => {
    const created = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'agent' } });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^svc_[A-Za-z0-9_-]{40,}$/);
    expect(created.body.id).toBeTruthy();

    const list = await h.call('GET', '/api/v1/api-keys', { token: owner.token });
    expect(list.status).toBe(200);
    const item = list.body.find((k: any) => k.id === created.body.id);
    expect(item).toMatchObject({ name: 'agent', expires_at: null });
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);
    expect(item.prefix.length).toBeLessThan(12);

    const me = await h.call('GET', '/api/v1/auth/me', { token: created.body.key });
    expect(me.body).toEqual({ id: owner.id, email: owner.email, name: 'owner' });
  });

  test('only the stored hash exists in the database', async ({ h, owner }) => {
    const created = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'x' } });
    const row = await h.services.db.selectFrom('platform.api_keys').selectAll().where('id', '=', created.body.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(created.body.key.slice(12));
  });

  test('revoke stops the key at once; revoking twice or another user key is 404', async ({ h, owner }) => {
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'x' } });
    expect((await h.call('GET', '/api/v1/auth/me', { token: k.body.key })).status).toBe(200);
    const other = await h.user('other');
    expect((await h.call('DELETE', `/api/v1/api-keys/${k.body.id}`, { token: other.token })).status).toBe(404);
    expect((await h.call('DELETE', `/api/v1/api-keys/${k.body.id}`, { token: owner.token })).status).toBe(204);
    expect((await h.call('GET', '/api/v1/auth/me', { token: k.body.key })).status).toBe(401);
    expect((await h.call('DELETE', `/api/v1/api-keys/${k.body.id}`, { token: owner.token })).status).toBe(404);
    expect((await h.call('GET', '/api/v1/api-keys', { token: owner.token })).body.map((x: any) => x.id)).not.toContain(k.body.id);
  });

  test('expires_at is honoured and must be in the future', async ({ h, owner }) => {
    const past = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'x', expires_at: '2000-01-01T00:00:00Z' } });
    expect(past.status).toBe(400);
    const bad = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'x', expires_at: 'tomorrow' } });
    expect(bad.status).toBe(400);
    // A key that expires in a moment works until then, and not after — also when its owner was cached. The process's
    // clock (Date only; timers and the database run as ever) is moved to either side of the expiry instead of waiting.
    const soon = new Date(Date.now() + 1500).toISOString();
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'x', expires_at: soon } });
    expect(k.status).toBe(201);
    expect((await h.call('GET', '/api/v1/auth/me', { token: k.body.key })).status).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.parse(soon) - 50);
      expect((await h.call('GET', '/api/v1/auth/me', { token: k.body.key })).status).toBe(200);
      vi.setSystemTime(Date.parse(soon) + 50);
      expect((await h.call('GET', '/api/v1/auth/me', { token: k.body.key })).status).toBe(401);
    } finally {
      vi.useRealTimers();
    }
  });

  test('an API key reaches exactly the workspaces of its owner', async ({ h, owner, ws }) => {
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'x' } });
    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'theirs');
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: k.body.key })).status).toBe(200);
    expect((await h.call('GET', `/api/v1/workspaces/${theirs.id}`, { token: k.body.key })).status).toBe(403);
    const list = await h.call('GET', '/api/v1/workspaces', { token: k.body.key });
    expect(list.body.map((w: any) => w.id)).toEqual([ws.id]);
  });

  test('API keys cannot manage API keys', async ({ h, owner }) => {
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'x' } });
    expect((await h.call('GET', '/api/v1/api-keys', { token: k.body.key })).status).toBe(403);
    expect((await h.call('POST', '/api/v1/api-keys', { token: k.body.key, body: { name: 'y' } })).status).toBe(403);
    expect((await h.call('DELETE', `/api/v1/api-keys/${k.body.id}`, { token: k.body.key })).status).toBe(403);
  });

  test('name is required', async ({ h, owner }) => {
    const r = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: {} });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('VALIDATION_ERROR');
  });
});
