import { ADMIN_TOKEN, describe, expect, test } from './support.js';

describe('members and invitations', () => {
  test('adding an existing user makes a membership; list; change role; remove', async ({ h, owner, ws }) => {
    const bob = await h.user('bob');
    const add = await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, {
      token: owner.token,
      body: { email: bob.email.toUpperCase(), role: 'member' },
    });
    expect(add.status).toBe(201);
    expect(add.body.membership).toMatchObject({ user_id: bob.id, user_email: bob.email, user_name: 'bob', role: 'member' });
    const memberId = add.body.membership.id;

    const dup = await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body: { email: bob.email, role: 'admin' } });
    expect(dup.status).toBe(409);

    const list = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: bob.token });
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(2);
    expect(Object.keys(list.body[0]).sort()).toEqual(['created_at', 'id', 'role', 'user_email', 'user_id', 'user_name']);

    const promote = await h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${memberId}`, { token: owner.token, body: { role: 'admin' } });
    expect(promote.status).toBe(200);
    expect(promote.body.role).toBe('admin');
    // bob is admin now and can manage members
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}/invitations`, { token: bob.token })).status).toBe(200);

    const bad = await h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${memberId}`, { token: owner.token, body: { role: 'owner' } });
    expect(bad.status).toBe(400);

    const rm = await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${memberId}`, { token: owner.token });
    expect(rm.status).toBe(204);
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: bob.token })).status).toBe(403);
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${memberId}`, { token: owner.token })).status).toBe(404);
  });

  test('the last admin cannot be demoted or removed', async ({ h, owner, ws }) => {
    const members = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    const me = members.body[0].id;
    const demote = await h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${me}`, { token: owner.token, body: { role: 'member' } });
    expect(demote.status).toBe(400);
    expect(demote.body.code).toBe('LAST_ADMIN');
    const remove = await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${me}`, { token: owner.token });
    expect(remove.status).toBe(400);
    expect(remove.body.code).toBe('LAST_ADMIN');

    // With a second admin, the first may step down.
    const carol = await h.user('carol');
    await h.addMember(owner.token, ws.id, carol.email, 'admin');
    const ok = await h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${me}`, { token: owner.token, body: { role: 'member' } });
    expect(ok.status).toBe(200);
  });

  test('two admins demoting each other at once leave one admin', async ({ h, owner, ws }) => {
    const dan = await h.user('dan');
    const danMember = await h.addMember(owner.token, ws.id, dan.email, 'admin');
    const members = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    const ownerMember = members.body.find((m: any) => m.user_id === owner.id).id;
    const [a, b] = await Promise.all([
      h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${danMember.id}`, { token: owner.token, body: { role: 'member' } }),
      h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${ownerMember}`, { token: dan.token, body: { role: 'member' } }),
    ]);
    const statuses = [a.status, b.status].sort();
    // Either the second call lost its admin role first (403) or hit LAST_ADMIN (400); never both succeed.
    expect(statuses[0]).toBe(200);
    expect([400, 403]).toContain(statuses[1]);
    const after = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    expect(after.body.filter((m: any) => m.role === 'admin')).toHaveLength(1);
  });

  test('an unknown email gets an invitation, applied when the user is created', async ({ h, owner, ws }) => {
    const email = h.uniqueEmail('invitee');
    const add = await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body: { email, role: 'admin' } });
    expect(add.status).toBe(201);
    expect(add.body.invitation).toMatchObject({ email, role: 'admin', workspace_id: ws.id });
    const again = await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body: { email, role: 'member' } });
    expect(again.status).toBe(409);

    const pending = await h.call('GET', `/api/v1/workspaces/${ws.id}/invitations`, { token: owner.token });
    expect(pending.body.map((i: any) => i.email)).toEqual([email]);

    const u = await h.call('POST', '/admin/v1/users', { headers: { 'x-admin-token': ADMIN_TOKEN }, body: { email, name: 'Invitee' } });
    expect(u.status).toBe(201);
    const members = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    expect(members.body.find((m: any) => m.user_id === u.body.id)?.role).toBe('admin');
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}/invitations`, { token: owner.token })).body).toEqual([]);
  });

  test('invitations can be cancelled and then do not apply', async ({ h, owner, ws }) => {
    const email = h.uniqueEmail('cancelled');
    const add = await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body: { email, role: 'member' } });
    const id = add.body.invitation.id;
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/invitations/${id}`, { token: owner.token })).status).toBe(204);
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/invitations/${id}`, { token: owner.token })).status).toBe(404);
    const u = await h.call('POST', '/admin/v1/users', { headers: { 'x-admin-token': ADMIN_TOKEN }, body: { email, name: 'C' } });
    const members = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    expect(members.body.map((m: any) => m.user_id)).not.toContain(u.body.id);
  });

  test('another workspace cannot cancel or see this workspace invitations or members', async ({ h, owner, ws }) => {
    const email = h.uniqueEmail('x');
    const add = await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body: { email, role: 'member' } });
    const mallory = await h.user('mallory');
    const hers = await h.workspace(mallory.token, 'hers');
    const cancel = await h.call('DELETE', `/api/v1/workspaces/${hers.id}/invitations/${add.body.invitation.id}`, { token: mallory.token });
    expect(cancel.status).toBe(404);
    const members = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    const ownerMemberId = members.body[0].id;
    const patch = await h.call('PATCH', `/api/v1/workspaces/${hers.id}/members/${ownerMemberId}`, { token: mallory.token, body: { role: 'member' } });
    expect(patch.status).toBe(404);
  });

  test('member body is validated', async ({ h, owner, ws }) => {
    for (const body of [{ email: 'nope', role: 'member' }, { email: h.uniqueEmail(), role: 'owner' }, {}]) {
      const r = await h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token, body });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
  });
});

describe('redirect URIs', () => {
  test('add, list as { items }, delete', async ({ h, owner, ws }) => {
    const uri = 'https://app.example.com/callback?x=1';
    const add = await h.call('POST', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token, body: { redirect_uri: uri } });
    expect(add.status).toBe(201);
    expect(add.body.redirect_uri).toBe(uri);
    expect((await h.call('POST', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token, body: { redirect_uri: uri } })).status).toBe(409);
    const list = await h.call('GET', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token });
    expect(list.body.items.map((i: any) => i.redirect_uri)).toEqual([uri]);
    const del = await h.call('DELETE', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token, body: { redirect_uri: uri } });
    expect(del.status).toBe(204);
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token })).body).toEqual({ items: [] });
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token, body: { redirect_uri: uri } })).status).toBe(404);
  });

  test('HTTPS only, no fragment, at most 2000 characters', async ({ h, owner, ws }) => {
    const long = `https://example.com/${'a'.repeat(2000 - 'https://example.com/'.length)}`;
    expect(long).toHaveLength(2000);
    expect((await h.call('POST', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token, body: { redirect_uri: long } })).status).toBe(201);
    for (const redirect_uri of ['http://example.com/cb', 'https://example.com/cb#x', 'https://example.com/cb#', `${long}a`, 'not a url', 'javascript:alert(1)']) {
      const r = await h.call('POST', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: owner.token, body: { redirect_uri } });
      expect(r.status, redirect_uri.slice(0, 40)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
  });
});
