import { describe, expect, test } from './support.js';

const call = (over: Record<string, unknown> = {}) => ({
  version: '1.0.0',
  url: 'https://shop.example.com/api/orders',
  method: 'POST',
  header_mappings: [{ source: { type: 'Const', value: 'application/json' }, target: 'Accept' }],
  body_mappings: [
    { source: { type: 'Variable', value: '$.order.id' }, target: 'order.id' },
    { source: { type: 'Const', value: 'web' }, target: 'channel' },
  ],
  ...over,
});
const effect = (over: Record<string, unknown> = {}) => ({ name: 'notify-shop', ...call(), ...over });

describe('Effects', () => {
  test('create with a first version, list, get, patch, versions, soft delete', async ({ h, owner, ws }) => {
    const auth = { token: owner.token, workspace: ws.id };
    const c = await h.call('POST', '/api/v1/effects', {
      ...auth,
      body: effect({
        description: 'tells the shop',
        query_mappings: [{ source: { type: 'Variable', value: 'items[0].sku' }, target: 'sku' }],
        input_schema: { type: 'object', properties: { order: { type: 'object' } } },
        timeout_secs: 10,
        retries: 2,
      }),
    });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    expect(c.body).toMatchObject({
      workspace_id: ws.id,
      name: 'notify-shop',
      description: 'tells the shop',
      latest_version: { version: '1.0.0', method: 'POST', url: 'https://shop.example.com/api/orders' },
    });
    expect(c.body.version).toMatchObject({
      effect_id: c.body.id,
      version: '1.0.0',
      method: 'POST',
      header_mappings: [{ source: { type: 'Const', value: 'application/json' }, target: 'Accept' }],
      body_mappings: call().body_mappings,
      query_mappings: [{ source: { type: 'Variable', value: 'items[0].sku' }, target: 'sku' }],
      input_schema: { type: 'object', properties: { order: { type: 'object' } } },
      timeout_secs: 10,
      retries: 2,
    });
    expect(c.body.latest_version.id).toBe(c.body.version.id);
    const id = c.body.id;

    const list = await h.call('GET', '/api/v1/effects', auth);
    expect(list.status).toBe(200);
    expect(list.body.map((e: any) => e.id)).toEqual([id]);
    const got = await h.call('GET', `/api/v1/effects/${id}`, auth);
    expect(got.body).toMatchObject({ id, name: 'notify-shop', latest_version: { version: '1.0.0' } });

    const p = await h.call('PATCH', `/api/v1/effects/${id}`, { ...auth, body: { name: 'notify', description: null } });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ name: 'notify', description: null, latest_version: { version: '1.0.0' } });
    // The call definition changes by adding a version, not by PATCH.
    const noUrl = await h.call('PATCH', `/api/v1/effects/${id}`, { ...auth, body: { url: 'https://elsewhere.example.com' } });
    expect(noUrl.status).toBe(400);
    expect(noUrl.body.code).toBe('VALIDATION_ERROR');

    // Defaults: no query mappings, schema, timeout (30 s at run time) or retries.
    const v2 = await h.call('POST', `/api/v1/effects/${id}/versions`, {
      ...auth,
      body: call({ version: '1.1.0', method: 'put', url: 'https://shop.example.com/api/v2/orders' }),
    });
    expect(v2.status, JSON.stringify(v2.body)).toBe(201);
    expect(v2.body).toMatchObject({ effect_id: id, version: '1.1.0', method: 'PUT', query_mappings: [], input_schema: null, timeout_secs: null, retries: 0 });
    const dup = await h.call('POST', `/api/v1/effects/${id}/versions`, { ...auth, body: call({ version: '1.1.0' }) });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('CONFLICT');
    const versions = await h.call('GET', `/api/v1/effects/${id}/versions`, auth);
    expect(versions.body.map((x: any) => x.version)).toEqual(['1.1.0', '1.0.0']);
    expect((await h.call('GET', `/api/v1/effects/${id}/versions?limit=1&offset=1`, auth)).body.map((x: any) => x.version)).toEqual(['1.0.0']);
    expect((await h.call('GET', `/api/v1/effects/${id}`, auth)).body.latest_version).toMatchObject({ version: '1.1.0', method: 'PUT' });

    expect((await h.call('DELETE', `/api/v1/effects/${id}`, auth)).status).toBe(204);
    expect((await h.call('GET', `/api/v1/effects/${id}`, auth)).status).toBe(404);
    expect((await h.call('GET', `/api/v1/effects/${id}/versions`, auth)).status).toBe(404);
    expect((await h.call('POST', `/api/v1/effects/${id}/versions`, { ...auth, body: call({ version: '2' }) })).status).toBe(404);
    expect((await h.call('PATCH', `/api/v1/effects/${id}`, { ...auth, body: { name: 'x' } })).status).toBe(404);
    expect((await h.call('DELETE', `/api/v1/effects/${id}`, auth)).status).toBe(404);
    expect((await h.call('GET', '/api/v1/effects', auth)).body).toEqual([]);
    expect((await h.call('GET', '/api/v1/effects/not-a-uuid', auth)).status).toBe(404);
  });

  test('bad input is 400 VALIDATION_ERROR naming the problem, and nothing is stored', async ({ h, owner, ws }) => {
    const auth = { token: owner.token, workspace: ws.id };
    const cases: [Record<string, unknown>, string][] = [
      [{ url: 'file:///etc/passwd' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: '' }, 'url'],
      [{ method: 'TRACE' }, 'method'],
      [{ method: 42 }, 'method'],
      [{ method: 'GET' }, 'carries no body'],
      [{ header_mappings: [{ source: { type: 'Const', value: 'k' }, target: 'Idempotency-Key' }] }, 'set by the runner'],
      [{ header_mappings: [{ source: { type: 'Const', value: 'k' }, target: 'Bad Header' }] }, 'not a valid header name'],
      [{ body_mappings: [{ source: { type: 'Variable', value: 'items[' }, target: 'a' }] }, 'not a valid path'],
      [{ header_mappings: [{ source: { type: 'Env', value: 'HOME' }, target: 'X-Home' }] }, 'header_mappings'],
      [{ body_mappings: [{ source: { type: 'Variable' }, target: 'a' }] }, 'body_mappings'],
      [{ body_mappings: 'x' }, 'body_mappings'],
      [{ query_mappings: [{ source: { type: 'Const', value: 'x' } }] }, 'query_mappings'],
      [{ header_mappings: undefined }, 'header_mappings'],
      [{ retries: 9 }, 'retries'],
      [{ retries: -1 }, 'retries'],
      [{ retries: 1.5 }, 'retries'],
      [{ timeout_secs: 0 }, 'timeout_secs'],
      [{ timeout_secs: 301 }, 'timeout_secs'],
      [{ input_schema: 'object' }, 'input_schema'],
      [{ name: undefined }, 'name'],
      [{ name: '  ' }, 'name'],
      [{ version: '' }, 'version'],
    ];
    for (const [over, field] of cases) {
      const r = await h.call('POST', '/api/v1/effects', { ...auth, body: effect(over) });
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(r.body.code, JSON.stringify(over)).toBe('VALIDATION_ERROR');
      expect(r.body.details, JSON.stringify(over)).toContain(field);
    }
    expect((await h.call('GET', '/api/v1/effects', auth)).body).toEqual([]);

    const id = (await h.call('POST', '/api/v1/effects', { ...auth, body: effect() })).body.id;
    const bad = await h.call('POST', `/api/v1/effects/${id}/versions`, { ...auth, body: call({ version: '2', url: 'ftp://files.example.com/x' }) });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('VALIDATION_ERROR');
    expect(bad.body.details).toContain('url');
    expect((await h.call('GET', `/api/v1/effects/${id}/versions`, auth)).body.map((x: any) => x.version)).toEqual(['1.0.0']);
    const badPatch = await h.call('PATCH', `/api/v1/effects/${id}`, { ...auth, body: { name: '' } });
    expect(badPatch.status).toBe(400);
    expect(badPatch.body.details).toContain('name');
  });

  test('members may read; only workflow editors may change', async ({ h, owner, ws }) => {
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const id = (await h.call('POST', '/api/v1/effects', { token: owner.token, workspace: ws.id, body: effect() })).body.id;
    const reader = { token: m.token, workspace: ws.id };
    expect((await h.call('GET', '/api/v1/effects', reader)).body.map((e: any) => e.id)).toEqual([id]);
    expect((await h.call('GET', `/api/v1/effects/${id}`, reader)).status).toBe(200);
    expect((await h.call('GET', `/api/v1/effects/${id}/versions`, reader)).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/api/v1/effects', effect()],
      ['PATCH', `/api/v1/effects/${id}`, { name: 'x' }],
      ['DELETE', `/api/v1/effects/${id}`, undefined],
      ['POST', `/api/v1/effects/${id}/versions`, call({ version: '2' })],
    ] as const) {
      const r = await h.call(method, path, { ...reader, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.code).toBe('FORBIDDEN');
    }
    // A workflow-editor group makes its members editors (and no longer the admins by default).
    const g = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [m.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: g } });
    expect((await h.call('PATCH', `/api/v1/effects/${id}`, { ...reader, body: { name: 'x' } })).status).toBe(200);
    expect((await h.call('POST', `/api/v1/effects/${id}/versions`, { ...reader, body: call({ version: '2' }) })).status).toBe(201);
    expect((await h.call('POST', '/api/v1/effects', { ...reader, body: effect({ name: 'by-member' }) })).status).toBe(201);
    expect((await h.call('PATCH', `/api/v1/effects/${id}`, { token: owner.token, workspace: ws.id, body: { name: 'y' } })).status).toBe(403);
    expect((await h.call('DELETE', `/api/v1/effects/${id}`, { token: owner.token, workspace: ws.id })).status).toBe(403);
    expect((await h.call('DELETE', `/api/v1/effects/${id}`, reader)).status).toBe(204);
  });

  test('another workspace cannot see, change or version them', async ({ h, owner, ws }) => {
    const id = (await h.call('POST', '/api/v1/effects', { token: owner.token, workspace: ws.id, body: effect({ name: 'canary-effect-name' }) })).body.id;
    const mallory = await h.user('mallory');
    const hers = await h.workspace(mallory.token, 'hers');
    for (const [method, path, body] of [
      ['GET', `/api/v1/effects/${id}`, undefined],
      ['PATCH', `/api/v1/effects/${id}`, { name: 'x' }],
      ['DELETE', `/api/v1/effects/${id}`, undefined],
      ['GET', `/api/v1/effects/${id}/versions`, undefined],
      ['POST', `/api/v1/effects/${id}/versions`, call({ version: '9' })],
    ] as const) {
      const r = await h.call(method, path, { token: mallory.token, workspace: hers.id, body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.code).toBe('NOT_FOUND');
    }
    const list = await h.call('GET', '/api/v1/effects', { token: mallory.token, workspace: hers.id });
    expect(JSON.stringify(list.body)).not.toContain('canary-effect-name');
    // Nothing changed on the owner's side.
    const mine = await h.call('GET', `/api/v1/effects/${id}/versions`, { token: owner.token, workspace: ws.id });
    expect(mine.body.map((x: any) => x.version)).toEqual(['1.0.0']);
    expect((await h.call('GET', `/api/v1/effects/${id}`, { token: owner.token, workspace: ws.id })).body.name).toBe('canary-effect-name');
  });

  test('create, update, add_version and delete are audited (without the URL path or mapping values)', async ({ h, owner, ws }) => {
    const auth = { token: owner.token, workspace: ws.id };
    const body = effect({
      url: 'https://hooks.example.com/services/canary-url-token',
      header_mappings: [{ source: { type: 'Const', value: 'canary-header-value' }, target: 'X-Api-Key' }],
    });
    const id = (await h.call('POST', '/api/v1/effects', { ...auth, body })).body.id;
    await h.call('PATCH', `/api/v1/effects/${id}`, { ...auth, body: { description: 'd' } });
    const v2 = (await h.call('POST', `/api/v1/effects/${id}/versions`, { ...auth, body: call({ version: '2', method: 'GET', body_mappings: [] }) })).body;
    await h.call('DELETE', `/api/v1/effects/${id}`, auth);
    // Failures write nothing.
    await h.call('POST', '/api/v1/effects', { ...auth, body: effect({ url: 'file:///etc/passwd' }) });

    const audit = await h.call('GET', '/api/v1/audit-logs?limit=1000', auth);
    expect(audit.status).toBe(200);
    const mine = audit.body.filter((e: any) => e.resource_type === 'effect' || e.resource_type === 'effect_version');
    expect(mine.map((e: any) => e.action)).toEqual(['delete_effect', 'add_effect_version', 'update_effect', 'create_effect']);
    const byAction = Object.fromEntries(mine.map((e: any) => [e.action, e]));
    expect(byAction.create_effect).toMatchObject({
      user_id: owner.id,
      workspace_id: ws.id,
      resource_type: 'effect',
      resource_id: id,
      details: { name: 'notify-shop', version: '1.0.0', method: 'POST', origin: 'https://hooks.example.com' },
    });
    expect(byAction.update_effect).toMatchObject({ resource_id: id, details: { changed: ['description'] } });
    expect(byAction.add_effect_version).toMatchObject({ resource_type: 'effect_version', resource_id: v2.id, details: { effect_id: id, version: '2', method: 'GET' } });
    expect(byAction.delete_effect).toMatchObject({ resource_id: id, details: { name: 'notify-shop' } });
    expect(JSON.stringify(audit.body)).not.toContain('canary-');
    // Reads are not audited.
    expect(audit.body.map((e: any) => e.action)).not.toContain('list_effects');
  });
});
