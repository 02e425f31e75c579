import { describe, expect, test } from './support.js';

describe('policy groups', () => {
  test('CRUD; PATCH replaces user_ids and stf_ids entirely', async ({ h, owner, ws }) => {
    const stf = '01900000-0000-7000-8000-00000000000a';
    const c = await h.call('POST', '/api/v1/policy-groups', { token: owner.token, workspace: ws.id, body: { name: 'sales', user_ids: [owner.id] } });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ name: 'sales', user_ids: [owner.id], stf_ids: [], workspace_id: ws.id });
    const id = c.body.id;
    const p = await h.call('PATCH', `/api/v1/policy-groups/${id}`, { token: owner.token, workspace: ws.id, body: { stf_ids: [stf] } });
    expect(p.body).toMatchObject({ user_ids: [owner.id], stf_ids: [stf] });
    const p2 = await h.call('PATCH', `/api/v1/policy-groups/${id}`, { token: owner.token, workspace: ws.id, body: { user_ids: [] } });
    expect(p2.body).toMatchObject({ user_ids: [], stf_ids: [stf] });
    expect((await h.call('GET', `/api/v1/policy-groups/${id}`, { token: owner.token, workspace: ws.id })).body.name).toBe('sales');
    expect((await h.call('GET', '/api/v1/policy-groups', { token: owner.token, workspace: ws.id })).body.map((g: any) => g.id)).toEqual([id]);
    expect((await h.call('DELETE', `/api/v1/policy-groups/${id}`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    expect((await h.call('GET', `/api/v1/policy-groups/${id}`, { token: owner.token, workspace: ws.id })).status).toBe(404);
  });

  test('a group used by a policy or a workspace setting cannot be deleted', async ({ h, owner, ws }) => {
    const g = await h.group(owner.token, ws.id, { user_ids: [owner.id] });
    const pid = await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 't', operation: 'select' });
    const r = await h.call('DELETE', `/api/v1/policy-groups/${g}`, { token: owner.token, workspace: ws.id });
    expect(r.status).toBe(409);
    await h.call('DELETE', `/api/v1/policies/${pid}`, { token: owner.token, workspace: ws.id });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { ddl_policy_group_id: g } });
    const r2 = await h.call('DELETE', `/api/v1/policy-groups/${g}`, { token: owner.token, workspace: ws.id });
    expect(r2.status).toBe(409);
    expect(r2.body.details).toContain('ddl_policy_group_id');
  });

  test('validation', async ({ h, owner, ws }) => {
    for (const body of [{}, { name: '' }, { name: 'x', user_ids: ['nope'] }, { name: 'x', stf_ids: 'x' }]) {
      const r = await h.call('POST', '/api/v1/policy-groups', { token: owner.token, workspace: ws.id, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('policies', () => {
  test('CRUD with conditions validated on save', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE docs (owner_id uuid, status text)');
    const g = await h.group(owner.token, ws.id, { user_ids: [owner.id] });
    const c = await h.call('POST', '/api/v1/policies', {
      token: owner.token,
      workspace: ws.id,
      body: { name: 'own', policy_group_id: g, mode: 'allow', table_name: 'docs', operation: 'select', condition: { owner_id: '$user_id' } },
    });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ name: 'own', mode: 'allow', table_name: 'docs', operation: 'select', policy_group_id: g });
    const id = c.body.id;
    const u = await h.call('PATCH', `/api/v1/policies/${id}`, { token: owner.token, workspace: ws.id, body: { mode: 'deny', condition: { status: { $in: ['secret'] } } } });
    expect(u.status).toBe(200);
    expect(u.body.mode).toBe('deny');
    expect((await h.call('GET', `/api/v1/policies/${id}`, { token: owner.token, workspace: ws.id })).body.mode).toBe('deny');
    expect((await h.call('GET', '/api/v1/policies', { token: owner.token, workspace: ws.id })).body).toHaveLength(1);
    expect((await h.call('DELETE', `/api/v1/policies/${id}`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    expect((await h.call('GET', `/api/v1/policies/${id}`, { token: owner.token, workspace: ws.id })).status).toBe(404);

    const bad: [Record<string, unknown>, string][] = [
      [{ condition: { owner_id: { $like: 'x' } } }, 'condition'],
      [{ condition: { status: { $in: 'x' } } }, 'condition'],
      [{ condition: { nope: 1 } }, 'nope'],
      [{ operation: 'ddl' }, 'operation'],
      [{ mode: 'maybe' }, 'mode'],
      [{ table_name: 'x'.repeat(24) }, 'table_name'],
      [{ policy_group_id: '01900000-0000-7000-8000-000000000000' }, 'policy_group_id'],
    ];
    for (const [patch, field] of bad) {
      const r = await h.call('POST', '/api/v1/policies', {
        token: owner.token,
        workspace: ws.id,
        body: { name: 'x', policy_group_id: g, mode: 'allow', table_name: 'docs', operation: 'select', ...patch },
      });
      expect(r.status, JSON.stringify(patch)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.details, JSON.stringify(patch)).toContain(field);
    }
  });

  test('a policy group of another workspace cannot be used', async ({ h, owner, ws }) => {
    const other = await h.workspace(owner.token, 'other');
    const theirs = await h.group(owner.token, other.id, { user_ids: [owner.id] });
    const r = await h.call('POST', '/api/v1/policies', {
      token: owner.token,
      workspace: ws.id,
      body: { name: 'x', policy_group_id: theirs, mode: 'allow', table_name: 't', operation: 'select' },
    });
    expect(r.status).toBe(400);
    expect((await h.call('GET', `/api/v1/policy-groups/${theirs}`, { token: owner.token, workspace: ws.id })).status).toBe(404);
  });

  test('editing is restricted to the policy editor group when it is set', async ({ h, owner, ws }) => {
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    // Unset: any member may edit.
    const g = await h.group(m.token, ws.id, { name: 'by-member', user_ids: [m.id] });
    const editors = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [owner.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { policy_editor_policy_group_id: editors } });
    const r = await h.call('POST', '/api/v1/policies', {
      token: m.token,
      workspace: ws.id,
      body: { name: 'x', policy_group_id: g, mode: 'allow', table_name: 't', operation: 'select' },
    });
    expect(r.status).toBe(403);
    expect((await h.call('PATCH', `/api/v1/policy-groups/${g}`, { token: m.token, workspace: ws.id, body: { user_ids: [] } })).status).toBe(403);
    expect((await h.call('DELETE', `/api/v1/policy-groups/${g}`, { token: m.token, workspace: ws.id })).status).toBe(403);
    // Reading stays open to members; the editor may edit.
    expect((await h.call('GET', '/api/v1/policy-groups', { token: m.token, workspace: ws.id })).status).toBe(200);
    expect((await h.call('PATCH', `/api/v1/policy-groups/${g}`, { token: owner.token, workspace: ws.id, body: { user_ids: [] } })).status).toBe(200);
  });
});
