import { afterAll } from 'vitest';
import { Harness, describe, eventually, expect, invalidation, test } from './support.js';

/** Two API processes on one database: what one changes, the other must stop serving from its caches. */
let other: Harness;
let other2: Harness | undefined;

afterAll(async () => {
  await other?.close();
  await other2?.close();
});



describe('caches across processes', () => {
  test('revocation, membership, policies and DDL reach the other process', async ({ h, owner, ws }) => {
    other ??= await Harness.create({}, h.url);
    const bob = await h.user('bob');
    const m = await h.addMember(owner.token, ws.id, bob.email, 'member');
    const key = (await h.call('POST', '/api/v1/api-keys', { token: bob.token, body: { name: 'k' } })).body;

    // Warm the other process's caches.
    expect((await other.call('GET', `/api/v1/workspaces/${ws.id}`, { token: key.key })).status).toBe(200);
    expect((await other.call('GET', `/api/v1/workspaces/${ws.id}`, { token: bob.token })).status).toBe(200);

    // API key revoked in one process: the other stops accepting it as soon as the invalidation reaches it (its
    // message, not the cache's TTL).
    const delivered = invalidation(other, `user:${bob.id}`);
    await h.call('DELETE', `/api/v1/api-keys/${key.id}`, { token: bob.token });
    await delivered;
    expect((await other.call('GET', '/api/v1/auth/me', { token: key.key })).status).toBe(401);

    // Member removed: the other process stops granting access.
    await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${m.id}`, { token: owner.token });
    await eventually(async () => (await other.call('GET', `/api/v1/workspaces/${ws.id}`, { token: bob.token })).status === 403);

    // Policies: the other process runs SQL with the cached policies until one is deleted.
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (x int)');
    const g = await h.group(owner.token, ws.id, { user_ids: [owner.id] });
    const p = await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 't', operation: 'select' });
    expect((await other.sql(owner.token, ws.id, 'SELECT * FROM t')).status).toBe(200);
    await h.call('DELETE', `/api/v1/policies/${p}`, { token: owner.token, workspace: ws.id });
    await eventually(async () => (await other.sql(owner.token, ws.id, 'SELECT * FROM t')).body.code === 'POLICY_DENIED');

    // DDL: the other process's cached columns follow (a stale soft-delete column would break the query).
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 't', operation: 'select' });
    await eventually(async () => (await other.sql(owner.token, ws.id, 'SELECT * FROM t')).status === 200);
    await h.sqlOk(owner.token, ws.id, 'ALTER TABLE t DROP COLUMN deleted_at');
    await eventually(async () => (await other.sql(owner.token, ws.id, 'SELECT * FROM t')).status === 200);
  });

  test('within one process a change is seen by the very next request', async ({ h, owner, ws }) => {
    const bob = await h.user('bob');
    const m = await h.addMember(owner.token, ws.id, bob.email, 'member');
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: bob.token })).status).toBe(200);
    await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${m.id}`, { token: owner.token });
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: bob.token })).status).toBe(403);
  });

  test('without its listener a process serves nothing from cache', async ({ h, owner }) => {
    other2 = await Harness.create({}, h.url);
    const key = (await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'k' } })).body;
    expect((await other2.call('GET', '/api/v1/auth/me', { token: key.key })).status).toBe(200);
    await other2.services.bus.stop();
    expect(other2.services.bus.healthy).toBe(false);
    await h.call('DELETE', `/api/v1/api-keys/${key.id}`, { token: owner.token });
    // No message can arrive now, so only not caching keeps this correct.
    expect((await other2.call('GET', '/api/v1/auth/me', { token: key.key })).status).toBe(401);
  });
});
