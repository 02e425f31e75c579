import { describe, expect, test } from './support.js';

const setup = (ws: string, rest: string) => `/api/v1/workspaces/${ws}/setup${rest}`;

/** Actions of the workspace's audit log, oldest first. */
async function actions(h: any, token: string, ws: string, match: RegExp): Promise<any[]> {
  const r = await h.call('GET', '/api/v1/audit-logs?limit=1000', { token, workspace: ws });
  expect(r.status).toBe(200);
  return r.body.reverse().filter((e: any) => match.test(e.action));
}

describe('prompt rules', () => {
  test('admins add, change and delete; members read; limits; audit', async ({ h, owner, ws }) => {
    const mem = await h.user('mem');
    await h.addMember(owner.token, ws.id, mem.email, 'member');

    const c = await h.call('POST', setup(ws.id, '/prompt-rules'), { token: owner.token, body: { content: 'Answer in French.' } });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ workspace_id: ws.id, content: 'Answer in French.', created_by: owner.id });
    expect(Object.keys(c.body).sort()).toEqual(['content', 'created_at', 'created_by', 'id', 'updated_at', 'workspace_id']);

    // Exactly at the limit is fine; one more is a validation error naming the field.
    const atLimit = await h.call('POST', setup(ws.id, '/prompt-rules'), { token: owner.token, body: { content: 'x'.repeat(50_000) } });
    expect(atLimit.status).toBe(201);
    const over = await h.call('POST', setup(ws.id, '/prompt-rules'), { token: owner.token, body: { content: 'x'.repeat(50_001) } });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ code: 'VALIDATION_ERROR', details: 'content: at most 50000 characters' });
    // Characters, not UTF-16 units.
    expect((await h.call('POST', setup(ws.id, '/prompt-rules'), { token: owner.token, body: { content: '😀'.repeat(50_000) } })).status).toBe(201);
    for (const body of [{}, { content: '' }, { content: '   ' }, { content: 5 }]) {
      const r = await h.call('POST', setup(ws.id, '/prompt-rules'), { token: owner.token, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.details).toMatch(/^content: /);
    }

    const list = await h.call('GET', setup(ws.id, '/prompt-rules'), { token: mem.token });
    expect(list.status).toBe(200);
    expect(list.body.map((r: any) => r.id)[0]).toBe(c.body.id);
    expect(list.body).toHaveLength(3);
    expect((await h.call('GET', setup(ws.id, '/prompt-rules?limit=1&offset=1'), { token: mem.token })).body.map((r: any) => r.id)).toEqual([
      atLimit.body.id,
    ]);

    // Members may read only.
    expect((await h.call('POST', setup(ws.id, '/prompt-rules'), { token: mem.token, body: { content: 'x' } })).status).toBe(403);
    expect((await h.call('PATCH', setup(ws.id, `/prompt-rules/${c.body.id}`), { token: mem.token, body: { content: 'x' } })).status).toBe(403);
    expect((await h.call('DELETE', setup(ws.id, `/prompt-rules/${c.body.id}`), { token: mem.token })).status).toBe(403);

    const p = await h.call('PATCH', setup(ws.id, `/prompt-rules/${c.body.id}`), { token: owner.token, body: { content: 'Answer in German.' } });
    expect(p.status).toBe(200);
    expect(p.body.content).toBe('Answer in German.');
    const pOver = await h.call('PATCH', setup(ws.id, `/prompt-rules/${c.body.id}`), { token: owner.token, body: { content: 'y'.repeat(50_001) } });
    expect(pOver.status).toBe(400);
    expect((await h.call('PATCH', setup(ws.id, `/prompt-rules/${c.body.id}`), { token: owner.token, body: { other: 1 } })).status).toBe(400);
    expect((await h.call('PATCH', setup(ws.id, '/prompt-rules/not-an-id'), { token: owner.token, body: { content: 'x' } })).status).toBe(404);

    expect((await h.call('DELETE', setup(ws.id, `/prompt-rules/${c.body.id}`), { token: owner.token })).status).toBe(204);
    expect((await h.call('DELETE', setup(ws.id, `/prompt-rules/${c.body.id}`), { token: owner.token })).status).toBe(404);

    const log = await actions(h, owner.token, ws.id, /_prompt_rule$/);
    expect(log.map((e: any) => e.action)).toEqual(['create_prompt_rule', 'create_prompt_rule', 'create_prompt_rule', 'update_prompt_rule', 'delete_prompt_rule']);
    expect(log[0]).toMatchObject({ resource_id: c.body.id, details: { length: 17 } });
    expect(log[4].resource_id).toBe(c.body.id);
  });

  test("another workspace's rule is 404; X-Workspace-ID must match the path", async ({ h, owner, ws }) => {
    const other = await h.workspace(owner.token, 'other');
    const r = await h.call('POST', setup(other.id, '/prompt-rules'), { token: owner.token, body: { content: 'theirs' } });
    expect((await h.call('PATCH', setup(ws.id, `/prompt-rules/${r.body.id}`), { token: owner.token, body: { content: 'x' } })).status).toBe(404);
    expect((await h.call('DELETE', setup(ws.id, `/prompt-rules/${r.body.id}`), { token: owner.token })).status).toBe(404);
    expect((await h.call('GET', setup(ws.id, '/prompt-rules'), { token: owner.token })).body).toEqual([]);
    const mismatch = await h.call('GET', setup(ws.id, '/prompt-rules'), { token: owner.token, workspace: other.id });
    expect(mismatch.status).toBe(400);
    expect((await h.call('GET', setup(ws.id, '/prompt-rules'), { token: owner.token, workspace: ws.id })).status).toBe(200);
  });
});

describe('skills', () => {
  test('admin-only CRUD; limits; isolation; audit', async ({ h, owner, ws }) => {
    const mem = await h.user('mem');
    await h.addMember(owner.token, ws.id, mem.email, 'member');
    const c = await h.call('POST', setup(ws.id, '/skills'), {
      token: owner.token,
      body: { name: ' sql-helper ', description: 'Writes SQL', content: 'Use CTEs.' },
    });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ name: 'sql-helper', description: 'Writes SQL', content: 'Use CTEs.', workspace_id: ws.id });
    const noDesc = await h.call('POST', setup(ws.id, '/skills'), { token: owner.token, body: { name: 'n', content: 'c'.repeat(50_000) } });
    expect(noDesc.status).toBe(201);
    expect(noDesc.body.description).toBeNull();

    for (const [body, field] of [
      [{ name: 'n', content: 'c'.repeat(50_001) }, 'content'],
      [{ name: '', content: 'c' }, 'name'],
      [{ name: 'n'.repeat(256), content: 'c' }, 'name'],
      [{ content: 'c' }, 'name'],
      [{ name: 'n' }, 'content'],
    ] as const) {
      const r = await h.call('POST', setup(ws.id, '/skills'), { token: owner.token, body });
      expect(r.status).toBe(400);
      expect(r.body.details).toContain(`${field}: `);
    }
    expect((await h.call('POST', setup(ws.id, '/skills'), { token: owner.token, body: { name: 'n'.repeat(255), content: 'c' } })).status).toBe(201);

    for (const [m, p, body] of [
      ['GET', '/skills', undefined],
      ['POST', '/skills', { name: 'n', content: 'c' }],
      ['GET', `/skills/${c.body.id}`, undefined],
      ['PATCH', `/skills/${c.body.id}`, { name: 'x' }],
      ['DELETE', `/skills/${c.body.id}`, undefined],
    ] as const) {
      expect((await h.call(m, setup(ws.id, p), { token: mem.token, body })).status, `${m} ${p}`).toBe(403);
    }

    expect((await h.call('GET', setup(ws.id, '/skills'), { token: owner.token })).body.map((s: any) => s.id).slice(0, 2)).toEqual([c.body.id, noDesc.body.id]);
    expect((await h.call('GET', setup(ws.id, `/skills/${c.body.id}`), { token: owner.token })).body).toEqual(c.body);
    const p = await h.call('PATCH', setup(ws.id, `/skills/${c.body.id}`), { token: owner.token, body: { description: null, content: 'New' } });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ name: 'sql-helper', description: null, content: 'New' });
    expect((await h.call('PATCH', setup(ws.id, `/skills/${c.body.id}`), { token: owner.token, body: { content: 'c'.repeat(50_001) } })).status).toBe(400);

    const other = await h.workspace(owner.token, 'other');
    for (const [m, body] of [['GET', undefined], ['PATCH', { name: 'x' }], ['DELETE', undefined]] as const) {
      expect((await h.call(m, setup(other.id, `/skills/${c.body.id}`), { token: owner.token, body })).status).toBe(404);
    }

    expect((await h.call('DELETE', setup(ws.id, `/skills/${c.body.id}`), { token: owner.token })).status).toBe(204);
    expect((await h.call('GET', setup(ws.id, `/skills/${c.body.id}`), { token: owner.token })).status).toBe(404);

    const log = await actions(h, owner.token, ws.id, /_skill$/);
    expect(log.map((e: any) => e.action)).toEqual(['create_skill', 'create_skill', 'create_skill', 'update_skill', 'delete_skill']);
    expect(log[0]).toMatchObject({ resource_id: c.body.id, details: { name: 'sql-helper' } });
    expect(log[3].details.changed).toEqual(['description', 'content']);
  });
});

describe('title rule', () => {
  test('none → { content: null }; put; limits; empty deletes; delete; roles; audit', async ({ h, owner, ws }) => {
    const mem = await h.user('mem');
    await h.addMember(owner.token, ws.id, mem.email, 'member');
    const none = await h.call('GET', setup(ws.id, '/title-rule'), { token: mem.token });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ workspace_id: ws.id, content: null, updated_by: null, updated_at: null });

    const put = await h.call('PUT', setup(ws.id, '/title-rule'), { token: owner.token, body: { content: 'Use five words.' } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ workspace_id: ws.id, content: 'Use five words.', updated_by: owner.id });
    expect((await h.call('GET', setup(ws.id, '/title-rule'), { token: mem.token })).body.content).toBe('Use five words.');

    expect((await h.call('PUT', setup(ws.id, '/title-rule'), { token: owner.token, body: { content: 't'.repeat(2000) } })).status).toBe(200);
    const over = await h.call('PUT', setup(ws.id, '/title-rule'), { token: owner.token, body: { content: 't'.repeat(2001) } });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ code: 'VALIDATION_ERROR', details: 'content: at most 2000 characters' });
    expect((await h.call('PUT', setup(ws.id, '/title-rule'), { token: owner.token, body: {} })).status).toBe(400);

    expect((await h.call('PUT', setup(ws.id, '/title-rule'), { token: mem.token, body: { content: 'x' } })).status).toBe(403);
    expect((await h.call('DELETE', setup(ws.id, '/title-rule'), { token: mem.token })).status).toBe(403);

    // Empty content deletes the rule.
    const cleared = await h.call('PUT', setup(ws.id, '/title-rule'), { token: owner.token, body: { content: '' } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.content).toBeNull();
    expect((await h.call('GET', setup(ws.id, '/title-rule'), { token: mem.token })).body.content).toBeNull();
    expect((await h.call('DELETE', setup(ws.id, '/title-rule'), { token: owner.token })).status).toBe(404);

    await h.call('PUT', setup(ws.id, '/title-rule'), { token: owner.token, body: { content: 'again' } });
    // Another workspace has its own (none).
    const other = await h.workspace(owner.token, 'other');
    expect((await h.call('GET', setup(other.id, '/title-rule'), { token: owner.token })).body.content).toBeNull();
    expect((await h.call('DELETE', setup(other.id, '/title-rule'), { token: owner.token })).status).toBe(404);
    expect((await h.call('DELETE', setup(ws.id, '/title-rule'), { token: owner.token })).status).toBe(204);
    expect((await h.call('GET', setup(ws.id, '/title-rule'), { token: mem.token })).body.content).toBeNull();

    const log = await actions(h, owner.token, ws.id, /_title_rule$/);
    expect(log.map((e: any) => e.action)).toEqual(['put_title_rule', 'put_title_rule', 'put_title_rule', 'put_title_rule', 'delete_title_rule']);
    expect(log[0].details).toEqual({ length: 15 });
    expect(log[2].details).toEqual({ deleted: true });
  });
});

describe('chat templates', () => {
  test('CRUD; activate leaves exactly one active; deactivate clears; audit', async ({ h, owner, ws }) => {
    const path = (p = '') => setup(ws.id, `/chat-templates${p}`);
    const t1 = await h.call('POST', path(), { token: owner.token, body: { name: 'Formal', content: 'Dear …' } });
    expect(t1.status).toBe(201);
    expect(t1.body).toMatchObject({ name: 'Formal', content: 'Dear …', is_active: false, workspace_id: ws.id });
    const t2 = await h.call('POST', path(), { token: owner.token, body: { name: 'Casual', content: 'Hey' } });
    const t3 = await h.call('POST', path(), { token: owner.token, body: { name: 'Max', content: 'c'.repeat(50_000) } });
    expect(t3.status).toBe(201);
    const over = await h.call('POST', path(), { token: owner.token, body: { name: 'x', content: 'c'.repeat(50_001) } });
    expect(over.status).toBe(400);
    expect(over.body.details).toBe('content: at most 50000 characters');
    expect((await h.call('POST', path(), { token: owner.token, body: { name: '', content: 'c' } })).status).toBe(400);

    const activeIds = async () =>
      (await h.call('GET', path(), { token: owner.token })).body.filter((t: any) => t.is_active).map((t: any) => t.id);

    const a1 = await h.call('POST', path(`/${t1.body.id}/activate`), { token: owner.token });
    expect(a1.status).toBe(200);
    expect(a1.body).toMatchObject({ id: t1.body.id, is_active: true });
    expect(await activeIds()).toEqual([t1.body.id]);
    const a2 = await h.call('POST', path(`/${t2.body.id}/activate`), { token: owner.token });
    expect(a2.body.is_active).toBe(true);
    expect(await activeIds()).toEqual([t2.body.id]);
    // Again: still exactly one.
    await h.call('POST', path(`/${t2.body.id}/activate`), { token: owner.token });
    expect(await activeIds()).toEqual([t2.body.id]);
    // Concurrent activations of different templates: exactly one active afterwards.
    const all = await Promise.all(
      [t1, t2, t3, t1, t3].map((t) => h.call('POST', path(`/${t.body.id}/activate`), { token: owner.token })),
    );
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await activeIds()).toHaveLength(1);

    // `deactivate` is its own route, not a template id.
    const d = await h.call('POST', path('/deactivate'), { token: owner.token });
    expect(d.status).toBe(200);
    expect(d.body.deactivated).toHaveLength(1);
    expect(await activeIds()).toEqual([]);
    const d2 = await h.call('POST', path('/deactivate'), { token: owner.token });
    expect(d2.body).toEqual({ deactivated: [] });
    // Other methods on it do not reach a template either.
    expect((await h.call('GET', path('/deactivate'), { token: owner.token })).status).toBe(404);
    expect((await h.call('PATCH', path('/deactivate'), { token: owner.token, body: { name: 'x' } })).status).toBe(404);
    expect((await h.call('POST', path('/deactivate/activate'), { token: owner.token })).status).toBe(404);

    const got = await h.call('GET', path(`/${t1.body.id}`), { token: owner.token });
    expect(got.body).toMatchObject({ id: t1.body.id, name: 'Formal' });
    const p = await h.call('PATCH', path(`/${t1.body.id}`), { token: owner.token, body: { name: 'Very formal' } });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ name: 'Very formal', content: 'Dear …', is_active: false });
    expect((await h.call('PATCH', path(`/${t1.body.id}`), { token: owner.token, body: { is_active: true } })).status).toBe(400);
    expect((await h.call('PATCH', path(`/${t1.body.id}`), { token: owner.token, body: { content: 'c'.repeat(50_001) } })).status).toBe(400);

    await h.call('POST', path(`/${t1.body.id}/activate`), { token: owner.token });
    expect((await h.call('DELETE', path(`/${t1.body.id}`), { token: owner.token })).status).toBe(204);
    expect(await activeIds()).toEqual([]);
    expect((await h.call('GET', path(`/${t1.body.id}`), { token: owner.token })).status).toBe(404);
    expect((await h.call('POST', path(`/${t1.body.id}/activate`), { token: owner.token })).status).toBe(404);

    const log = await actions(h, owner.token, ws.id, /chat_template/);
    const names = log.map((e: any) => e.action);
    expect(names.slice(0, 3)).toEqual(['create_chat_template', 'create_chat_template', 'create_chat_template']);
    expect(names).toContain('activate_chat_template');
    expect(names).toContain('deactivate_chat_templates');
    expect(names).toContain('update_chat_template');
    expect(names.at(-1)).toBe('delete_chat_template');
    const second = log.filter((e: any) => e.action === 'activate_chat_template')[1];
    expect(second).toMatchObject({ resource_id: t2.body.id, details: { deactivated: [t1.body.id] } });
  });

  test('admin only; isolation between workspaces', async ({ h, owner, ws }) => {
    const mem = await h.user('mem');
    await h.addMember(owner.token, ws.id, mem.email, 'member');
    const t = await h.call('POST', setup(ws.id, '/chat-templates'), { token: owner.token, body: { name: 'T', content: 'c' } });
    for (const [m, p, body] of [
      ['GET', '/chat-templates', undefined],
      ['POST', '/chat-templates', { name: 'n', content: 'c' }],
      ['GET', `/chat-templates/${t.body.id}`, undefined],
      ['PATCH', `/chat-templates/${t.body.id}`, { name: 'x' }],
      ['DELETE', `/chat-templates/${t.body.id}`, undefined],
      ['POST', `/chat-templates/${t.body.id}/activate`, undefined],
      ['POST', '/chat-templates/deactivate', undefined],
    ] as const) {
      expect((await h.call(m, setup(ws.id, p), { token: mem.token, body })).status, `${m} ${p}`).toBe(403);
    }
    const other = await h.workspace(owner.token, 'other');
    for (const [m, p, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { name: 'x' }],
      ['POST', '/activate', undefined],
      ['DELETE', '', undefined],
    ] as const) {
      expect((await h.call(m, setup(other.id, `/chat-templates/${t.body.id}${p}`), { token: owner.token, body })).status, `${m} ${p}`).toBe(404);
    }
    // Deactivating in another workspace leaves this one's active template alone.
    await h.call('POST', setup(ws.id, `/chat-templates/${t.body.id}/activate`), { token: owner.token });
    await h.call('POST', setup(other.id, '/chat-templates/deactivate'), { token: owner.token });
    expect((await h.call('GET', setup(ws.id, `/chat-templates/${t.body.id}`), { token: owner.token })).body.is_active).toBe(true);
  });
});

describe('dashboard flag', () => {
  test('off by default; admins set it, members read it; audit', async ({ h, owner, ws }) => {
    const mem = await h.user('mem');
    await h.addMember(owner.token, ws.id, mem.email, 'member');
    expect((await h.call('GET', setup(ws.id, '/dashboard-enabled'), { token: mem.token })).body).toEqual({ enabled: false });
    expect((await h.call('PUT', setup(ws.id, '/dashboard-enabled'), { token: mem.token, body: { enabled: true } })).status).toBe(403);
    const put = await h.call('PUT', setup(ws.id, '/dashboard-enabled'), { token: owner.token, body: { enabled: true } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ enabled: true });
    expect((await h.call('GET', setup(ws.id, '/dashboard-enabled'), { token: mem.token })).body).toEqual({ enabled: true });
    for (const body of [{}, { enabled: 'yes' }, { enabled: 1 }]) {
      const r = await h.call('PUT', setup(ws.id, '/dashboard-enabled'), { token: owner.token, body });
      expect(r.status).toBe(400);
      expect(r.body.details).toMatch(/^enabled: /);
    }
    const other = await h.workspace(owner.token, 'other');
    expect((await h.call('GET', setup(other.id, '/dashboard-enabled'), { token: owner.token })).body).toEqual({ enabled: false });
    await h.call('PUT', setup(ws.id, '/dashboard-enabled'), { token: owner.token, body: { enabled: false } });
    expect((await h.call('GET', setup(ws.id, '/dashboard-enabled'), { token: mem.token })).body).toEqual({ enabled: false });
    const log = await actions(h, owner.token, ws.id, /^put_dashboard_enabled$/);
    expect(log.map((e: any) => e.details)).toEqual([{ enabled: true }, { enabled: false }]);
  });
});

describe('saas credentials (list)', () => {
  test('members see connected providers by name, never values', async ({ h, owner, ws }) => {
    const mem = await h.user('mem');
    await h.addMember(owner.token, ws.id, mem.email, 'member');
    expect((await h.call('GET', setup(ws.id, '/saas-credentials'), { token: mem.token })).body).toEqual([]);
    const secret = 'canary-saas-credential-42';
    const put = await h.call('PUT', `/admin/v1/workspaces/${ws.id}/credentials/drive_workspace`, {
      headers: { 'x-admin-token': h.services.adminToken ?? '' },
      body: { value: secret },
    });
    expect(put.status).toBe(204);
    const list = await h.call('GET', setup(ws.id, '/saas-credentials'), { token: mem.token });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([{ provider: 'drive_workspace', updated_at: expect.any(String) }]);
    expect(JSON.stringify(list.body)).not.toContain(secret);
    const other = await h.workspace(owner.token, 'other');
    expect((await h.call('GET', setup(other.id, '/saas-credentials'), { token: owner.token })).body).toEqual([]);
  });
});
