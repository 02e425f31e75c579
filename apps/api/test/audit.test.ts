import { describe, expect, test } from './support.js';

describe('audit log', () => {
  test('mutations write entries; filters, prefix match, paging', async ({ h, owner, ws }) => {
    const bob = await h.user('bob');
    const m = await h.addMember(owner.token, ws.id, bob.email, 'member');
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${m.id}`, { token: owner.token, body: { role: 'admin' } });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { name: 'Renamed' } });
    await h.call('POST', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token, body: { redirect_uri: 'https://x.example/cb' } });

    const all = await h.call('GET', '/api/v1/audit-logs', { token: owner.token, workspace: ws.id });
    expect(all.status).toBe(200);
    const actions = all.body.map((e: any) => e.action);
    expect(actions).toEqual(['add_redirect_uri', 'update_workspace', 'update_member', 'add_member', 'create_workspace']);
    const upd = all.body.find((e: any) => e.action === 'update_member');
    expect(upd).toMatchObject({ user_id: owner.id, resource_type: 'member', resource_id: m.id, workspace_id: ws.id, api_key_id: null });
    expect(upd.details).toMatchObject({ role: 'admin', user_id: bob.id });

    const prefix = await h.call('GET', '/api/v1/audit-logs?action=update_*', { token: owner.token, workspace: ws.id });
    expect(prefix.body.map((e: any) => e.action)).toEqual(['update_workspace', 'update_member']);
    const exact = await h.call('GET', '/api/v1/audit-logs?action=update_', { token: owner.token, workspace: ws.id });
    expect(exact.body).toEqual([]);
    const byType = await h.call('GET', `/api/v1/audit-logs?resource_type=member&resource_id=${m.id}`, { token: owner.token, workspace: ws.id });
    expect(byType.body).toHaveLength(2);
    const byUser = await h.call('GET', `/api/v1/audit-logs?user_id=${bob.id}`, { token: owner.token, workspace: ws.id });
    expect(byUser.body).toEqual([]);
    const page = await h.call('GET', '/api/v1/audit-logs?limit=2&offset=1', { token: owner.token, workspace: ws.id });
    expect(page.body.map((e: any) => e.action)).toEqual(['update_workspace', 'update_member']);
  });

  test('entries made with an API key name the key; no secret is recorded', async ({ h, owner, ws }) => {
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'agent' } });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: k.body.key, body: { custom_prompt: 'secret-ish prompt' } });
    const r = await h.call('GET', '/api/v1/audit-logs?action=update_workspace', { token: owner.token, workspace: ws.id });
    expect(r.body[0].api_key_id).toBe(k.body.id);
    const keyRows = await h.services.db.selectFrom('platform.audit_logs').selectAll().where('action', '=', 'create_api_key').execute();
    expect(JSON.stringify(keyRows)).not.toContain(k.body.key);
  });

  test('a time range: since (inclusive) and until (exclusive) bound created_at', async ({ h, owner, ws }) => {
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { name: 'first' } });
    const all = await h.call('GET', '/api/v1/audit-logs', { token: owner.token, workspace: ws.id });
    const first = all.body.find((e: any) => e.action === 'update_workspace');
    const at = encodeURIComponent(first.created_at);
    const since = await h.call('GET', `/api/v1/audit-logs?since=${at}`, { token: owner.token, workspace: ws.id });
    expect(since.body.map((e: any) => e.id)).toContain(first.id);
    expect(since.body.every((e: any) => e.created_at >= first.created_at)).toBe(true);
    const until = await h.call('GET', `/api/v1/audit-logs?until=${at}`, { token: owner.token, workspace: ws.id });
    expect(until.body.map((e: any) => e.id)).not.toContain(first.id);
    expect(until.body.every((e: any) => e.created_at < first.created_at)).toBe(true);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await h.call('GET', `/api/v1/audit-logs?since=${future}`, { token: owner.token, workspace: ws.id })).body).toEqual([]);
    for (const q of ['since=yesterday', 'until=2026-01-01']) {
      const r = await h.call('GET', `/api/v1/audit-logs?${q}`, { token: owner.token, workspace: ws.id });
      expect(r.status, q).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
  });

  test('limit default 100, maximum 1000; bad values are 400', async ({ h, owner, ws }) => {
    for (const q of ['limit=1001', 'limit=0', 'limit=abc', 'offset=-1', 'user_id=nope']) {
      const r = await h.call('GET', `/api/v1/audit-logs?${q}`, { token: owner.token, workspace: ws.id });
      expect(r.status, q).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
    expect((await h.call('GET', '/api/v1/audit-logs?limit=1000', { token: owner.token, workspace: ws.id })).status).toBe(200);
  });

  test('needs X-Workspace-ID; another workspace entries never show', async ({ h, owner, ws }) => {
    const missing = await h.call('GET', '/api/v1/audit-logs', { token: owner.token });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: 'Missing X-Workspace-ID', code: 'BAD_REQUEST' });
    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'theirs');
    await h.call('PATCH', `/api/v1/workspaces/${theirs.id}`, { token: stranger.token, body: { name: 'canary-xyz' } });
    const mine = await h.call('GET', '/api/v1/audit-logs?limit=1000', { token: owner.token, workspace: ws.id });
    expect(JSON.stringify(mine.body)).not.toContain('canary-xyz');
    expect(mine.body.every((e: any) => e.workspace_id === ws.id)).toBe(true);
  });
});
