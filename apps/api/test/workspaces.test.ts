import { SignJWT } from 'jose';
import { JWT_SECRET, describe, expect, test } from './support.js';

describe('workspaces', () => {
  test('create makes the caller admin; list, get, patch, soft delete', async ({ h, owner }) => {
    const created = await h.call('POST', '/api/v1/workspaces', { token: owner.token, body: { name: 'Acme' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Acme',
      ddl_policy_group_id: null,
      workflow_editor_policy_group_id: null,
      policy_editor_policy_group_id: null,
      mcp_timeout_ms: 300000,
      custom_prompt: '',
      auto_embed_files: false,
      auto_embed_tables: false,
    });
    const id = created.body.id;

    const list = await h.call('GET', '/api/v1/workspaces', { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body.map((w: any) => w.id)).toContain(id);
    expect(list.body.find((w: any) => w.id === id).role).toBe('admin');

    const got = await h.call('GET', `/api/v1/workspaces/${id}`, { token: owner.token });
    expect(got.body).toMatchObject({ id, name: 'Acme', role: 'admin' });

    const patched = await h.call('PATCH', `/api/v1/workspaces/${id}`, {
      token: owner.token,
      body: { name: 'Acme 2', mcp_timeout_ms: 30000, custom_prompt: 'be brief', auto_embed_files: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Acme 2', mcp_timeout_ms: 30000, custom_prompt: 'be brief', auto_embed_files: true });

    const del = await h.call('DELETE', `/api/v1/workspaces/${id}`, { token: owner.token });
    expect(del.status).toBe(204);
    expect((await h.call('GET', `/api/v1/workspaces/${id}`, { token: owner.token })).status).toBe(404);
    const after = await h.call('GET', '/api/v1/workspaces', { token: owner.token });
    expect(after.body.map((w: any) => w.id)).not.toContain(id);
    expect((await h.call('DELETE', `/api/v1/workspaces/${id}`, { token: owner.token })).status).toBe(404);
  });

  test('name must have 1-255 characters', async ({ h, owner }) => {
    for (const name of ['', 'x'.repeat(256)]) {
      const r = await h.call('POST', '/api/v1/workspaces', { token: owner.token, body: { name } });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.details).toContain('name');
    }
    const missing = await h.call('POST', '/api/v1/workspaces', { token: owner.token, body: {} });
    expect(missing.status).toBe(400);
    expect((await h.call('POST', '/api/v1/workspaces', { token: owner.token, body: { name: 'x'.repeat(255) } })).status).toBe(201);
  });

  test('patch validates every field', async ({ h, owner, ws }) => {
    const bad: Record<string, unknown>[] = [
      { name: '' },
      { mcp_timeout_ms: 29999 },
      { mcp_timeout_ms: 3600001 },
      { mcp_timeout_ms: 40000.5 },
      { mcp_timeout_ms: '40000' },
      { auto_embed_files: 'yes' },
      { ddl_policy_group_id: 'not-a-uuid' },
      { unknown_field: 1 },
    ];
    for (const body of bad) {
      const r = await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
    for (const mcp_timeout_ms of [30000, 3600000]) {
      const r = await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { mcp_timeout_ms } });
      expect(r.status).toBe(200);
    }
  });

  test('policy-group ids must belong to the workspace', async ({ h, owner, ws }) => {
    const other = await h.workspace(owner.token, 'other');
    const { db } = h.services;
    const mine = '01900000-0000-7000-8000-0000000000a1';
    const theirs = '01900000-0000-7000-8000-0000000000b1';
    await db.insertInto('platform.policy_groups').values([
      { id: mine, workspace_id: ws.id, name: 'editors' },
      { id: theirs, workspace_id: other.id, name: 'editors' },
    ]).onConflict((oc) => oc.doNothing()).execute();
    // Ids above are fixed, so make sure they belong where this test says.
    await db.updateTable('platform.policy_groups').set({ workspace_id: ws.id }).where('id', '=', mine).execute();
    await db.updateTable('platform.policy_groups').set({ workspace_id: other.id }).where('id', '=', theirs).execute();

    const wrong = await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, {
      token: owner.token,
      body: { ddl_policy_group_id: theirs },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.details).toContain('ddl_policy_group_id');

    const ok = await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, {
      token: owner.token,
      body: { ddl_policy_group_id: mine, workflow_editor_policy_group_id: mine, policy_editor_policy_group_id: null },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.ddl_policy_group_id).toBe(mine);
    await db.updateTable('platform.workspaces').set({ ddl_policy_group_id: null, workflow_editor_policy_group_id: null }).where('id', '=', ws.id).execute();
  });

  test("a person's login creates workspaces: a session token or an unscoped JWT; API keys and scoped JWTs cannot (issue 31)", async ({ h, owner, ws }) => {
    const create = (token: string) => h.call('POST', '/api/v1/workspaces', { token, body: { name: 'made' } });
    const jwt = (claims: Record<string, unknown>) =>
      new SignJWT({ email: owner.email, email_verified: true, ...claims })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(`login-${owner.id}`)
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(JWT_SECRET));

    // An unscoped JWT is the owner's interactive login, as their session token is: the workspace is theirs.
    const byJwt = await create(await jwt({}));
    expect(byJwt.status).toBe(201);
    const got = await h.call('GET', `/api/v1/workspaces/${byJwt.body.id}`, { token: owner.token });
    expect([got.status, got.body.role]).toEqual([200, 'admin']);

    // A JWT scoped to one workspace and an API key act for agents and apps, not the person: refused, nothing made.
    const key = (await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'k' } })).body.key;
    const before = (await h.call('GET', '/api/v1/workspaces', { token: owner.token })).body.length;
    for (const token of [await jwt({ workspace_id: ws.id }), key]) {
      const r = await create(token);
      expect([r.status, r.body.code, r.body.error]).toEqual([403, 'FORBIDDEN', 'This operation needs a session token or a login JWT']);
    }
    expect((await h.call('GET', '/api/v1/workspaces', { token: owner.token })).body.length).toBe(before);
  });

  test('members see the workspace; other workspaces stay invisible', async ({ h, owner, ws }) => {
    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'theirs');
    const list = await h.call('GET', '/api/v1/workspaces', { token: owner.token });
    expect(list.body.map((w: any) => w.id)).not.toContain(theirs.id);
    expect((await h.call('GET', `/api/v1/workspaces/${theirs.id}`, { token: owner.token })).status).toBe(403);
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: stranger.token })).status).toBe(403);
    expect((await h.call('GET', '/api/v1/workspaces/not-a-uuid', { token: owner.token })).status).toBe(404);
  });

  test('X-Workspace-ID on a path-scoped route must equal the path id', async ({ h, owner, ws }) => {
    const same = await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: owner.token, workspace: ws.id });
    expect(same.status).toBe(200);
    const other = await h.workspace(owner.token, 'other');
    const r = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, workspace: other.id });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('BAD_REQUEST');
  });
});
