import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './support.js';

let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };

const docs = (workspace = ws.id) => `/api/v1/workspaces/${workspace}/documents`;
/**
 * Documents take their workspace from X-Workspace-ID (docs/http-api.md#where-the-workspace-comes-from): by default,
 * send the one named in the path.
 */
const call = (method: string, path: string, opts: Parameters<Harness['call']>[2] = {}) =>
  h.call(method, path, { workspace: /\/workspaces\/([^/]+)\/documents/.exec(path)?.[1], ...opts });
const create = (body: unknown, token = owner.token, workspace = ws.id) => call('POST', docs(workspace), { token, body });
const patch = (id: string, body: unknown, token = owner.token) => call('PATCH', `${docs()}/${id}`, { token, body });
const get = (id: string, token = owner.token) => call('GET', `${docs()}/${id}`, { token });
const versions = (id: string, query = '', token = owner.token) => call('GET', `${docs()}/${id}/versions${query}`, { token });
const list = (query = '', token = owner.token) => call('GET', `${docs()}${query}`, { token });
const valid = { title: 'Runbook', doc_type: 'guide', status: 'draft', content: '# Runbook\n\nStep one.' };

beforeAll(async () => {
  h = await Harness.create();
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Docs');
});
afterAll(async () => {
  await h?.close();
});

describe('documents', () => {
  it('create → 201 with content at version 1; get has content; the list does not', async () => {
    const r = await create({ ...valid, metadata: { owner: 'ops', tags: ['a'] } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      ...valid,
      workspace_id: ws.id,
      metadata: { owner: 'ops', tags: ['a'] },
      version: 1,
      created_by: owner.id,
    });
    expect(typeof r.body.id).toBe('string');
    expect(typeof r.body.created_at).toBe('string');

    const got = await get(r.body.id);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(r.body);

    const l = await list();
    expect(l.status).toBe(200);
    const item = l.body.find((d: any) => d.id === r.body.id);
    expect(item).toMatchObject({ title: 'Runbook', doc_type: 'guide', status: 'draft', version: 1, metadata: { owner: 'ops', tags: ['a'] } });
    for (const d of l.body) expect(d).not.toHaveProperty('content');

    const noMeta = await create({ ...valid, metadata: null });
    expect(noMeta.body.metadata).toEqual({});
  });

  it('filters the list by doc_type and status, exactly', async () => {
    const mine = await h.workspace(owner.token, 'Filters');
    const make = async (doc_type: string, status: string) =>
      (await create({ ...valid, title: `${doc_type} ${status}`, doc_type, status }, owner.token, mine.id)).body.id as string;
    const a = await make('spec', 'draft');
    const b = await make('spec', 'published');
    const c = await make('note', 'draft');
    const ids = async (q: string) => (await call('GET', `${docs(mine.id)}${q}`, { token: owner.token })).body.map((d: any) => d.id);
    expect(await ids('')).toEqual([a, b, c]);
    expect(await ids('?doc_type=spec')).toEqual([a, b]);
    expect(await ids('?status=draft')).toEqual([a, c]);
    expect(await ids('?doc_type=spec&status=published')).toEqual([b]);
    expect(await ids('?doc_type=SPEC')).toEqual([]);
    expect(await ids('?limit=1&offset=2')).toEqual([c]);
    const bad = await call('GET', `${docs(mine.id)}?doc_type=`, { token: owner.token });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toContain('doc_type: must not be empty');
  });

  it('PATCH of content adds a version snapshot; title/status/metadata alone or equal content do not', async () => {
    const d = (await create(valid)).body;
    const t = await patch(d.id, { title: 'Runbook v2', status: 'review', metadata: { reviewed: true } });
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({ title: 'Runbook v2', status: 'review', metadata: { reviewed: true }, version: 1, content: valid.content });
    expect((await versions(d.id)).body).toHaveLength(1);

    const same = await patch(d.id, { content: valid.content });
    expect(same.body.version).toBe(1);
    expect((await versions(d.id)).body).toHaveLength(1);

    const c = await patch(d.id, { content: '# Runbook\n\nStep two.' });
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ version: 2, content: '# Runbook\n\nStep two.', title: 'Runbook v2' });
    const c3 = await patch(d.id, { content: '# Three', title: 'Third' });
    expect(c3.body.version).toBe(3);
    expect((await get(d.id)).body).toMatchObject({ version: 3, content: '# Three', title: 'Third', status: 'review' });

    const v = await versions(d.id);
    expect(v.status).toBe(200);
    expect(v.body.map((x: any) => [x.version, x.title, x.content])).toEqual([
      [3, 'Third', '# Three'],
      [2, 'Runbook v2', '# Runbook\n\nStep two.'],
      [1, 'Runbook', valid.content],
    ]);
    expect(v.body[0]).toMatchObject({ document_id: d.id, created_by: owner.id });
    expect((await versions(d.id, '?limit=1&offset=1')).body.map((x: any) => x.version)).toEqual([2]);
    const tooMany = await versions(d.id, '?limit=51');
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details).toContain('limit must be at most 50');

    expect((await patch(d.id, { metadata: null })).body.metadata).toEqual({});
  });

  it('DELETE is soft: 204, then 404 everywhere and left out of the list', async () => {
    const d = (await create(valid)).body;
    const del = await call('DELETE', `${docs()}/${d.id}`, { token: owner.token });
    expect(del.status).toBe(204);
    expect((await get(d.id)).status).toBe(404);
    expect((await get(d.id)).body.code).toBe('NOT_FOUND');
    expect((await versions(d.id)).status).toBe(404);
    expect((await patch(d.id, { title: 'back?' })).status).toBe(404);
    expect((await call('DELETE', `${docs()}/${d.id}`, { token: owner.token })).status).toBe(404);
    expect((await list()).body.map((x: any) => x.id)).not.toContain(d.id);
    expect((await get('not-a-uuid')).status).toBe(404);
  });

  it('bad input → 400 VALIDATION_ERROR with details naming the field, storing nothing', async () => {
    const mine = await h.workspace(owner.token, 'Invalid');
    const cases: [unknown, string][] = [
      [{ doc_type: 'g', status: 's', content: 'x' }, 'title: required'],
      [{ ...valid, title: '   ' }, 'title: must not be empty'],
      [{ ...valid, title: 'x'.repeat(501) }, 'title: at most 500 characters'],
      [{ ...valid, content: 42 }, 'content: must be a string'],
      [{ ...valid, content: undefined }, 'content: required'],
      [{ ...valid, content: 'x'.repeat(5 * 1024 * 1024 + 1) }, 'content: at most 5242880 bytes'],
      [{ ...valid, content: 'a\u0000b' }, 'content: must not contain the NUL character'],
      [{ ...valid, doc_type: '' }, 'doc_type: must not be empty'],
      [{ ...valid, status: 'x'.repeat(101) }, 'status: at most 100 characters'],
      [{ ...valid, status: 7 }, 'status: must be a string'],
      [{ ...valid, metadata: [1, 2] }, 'metadata: must be a JSON object'],
      [{ ...valid, metadata: 'text' }, 'metadata: must be a JSON object'],
      [{ ...valid, metadata: { big: 'x'.repeat(64 * 1024) } }, 'metadata: at most 65536 bytes as JSON'],
      [{ ...valid, metadata: { k: ['\u0000'] } }, 'metadata: must not contain the NUL character'],
    ];
    for (const [body, detail] of cases) {
      const r = await create(body, owner.token, mine.id);
      expect(r.status, detail).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.details).toContain(detail);
    }
    const several = await create({ title: 5, content: 'x' }, owner.token, mine.id);
    expect(several.body.details).toContain('title: must be a string');
    expect(several.body.details).toContain('doc_type: required');
    expect(several.body.details).toContain('status: required');
    const notObject = await call('POST', docs(mine.id), { token: owner.token, rawBody: '"text"', headers: { 'content-type': 'application/json' } });
    expect(notObject.status).toBe(400);
    expect(notObject.body.details).toContain('the body must be a JSON object');
    // Exactly at the limits is fine; the limit counts UTF-8 bytes, not characters.
    const edge = await create(
      { ...valid, title: 'x'.repeat(500), status: 'y'.repeat(100), content: 'é'.repeat((5 * 1024 * 1024) / 2) },
      owner.token,
      mine.id,
    );
    expect(edge.status).toBe(201);
    expect((await create({ ...valid, content: 'é'.repeat((5 * 1024 * 1024) / 2 + 1) }, owner.token, mine.id)).status).toBe(400);
    expect((await call('GET', docs(mine.id), { token: owner.token })).body.map((d: any) => d.id)).toEqual([edge.body.id]);

    const d = (await create(valid)).body;
    const cases2: [unknown, string][] = [
      [{ content: null }, 'content: must be a string'],
      [{ title: '' }, 'title: must not be empty'],
      [{ metadata: 3 }, 'metadata: must be a JSON object'],
      [{ version: 9 }, 'version: unknown field'],
    ];
    for (const [body, detail] of cases2) {
      const r = await patch(d.id, body);
      expect(r.status, detail).toBe(400);
      expect(r.body.details).toContain(detail);
    }
    expect((await get(d.id)).body).toMatchObject({ title: valid.title, version: 1 });
    const malformed = await call('PATCH', `${docs()}/${d.id}`, { token: owner.token, rawBody: '{"title":', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('BAD_REQUEST');
  });
});

describe('permissions and isolation', () => {
  it('members read; writing needs a workflow editor (admins while no editor group is set)', async () => {
    const d = (await create(valid)).body;
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    expect((await list('', member.token)).status).toBe(200);
    expect((await get(d.id, member.token)).body.content).toBe(valid.content);
    expect((await versions(d.id, '', member.token)).status).toBe(200);

    // No editor group: only admins write.
    for (const r of [
      await create(valid, member.token),
      await patch(d.id, { content: 'member edit' }, member.token),
      await call('DELETE', `${docs()}/${d.id}`, { token: member.token }),
    ]) {
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('FORBIDDEN');
    }

    // An editor group the member is in: the member writes, and the admin outside it no longer does.
    const g = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [member.id] });
    expect((await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: g } })).status).toBe(200);
    const byMember = await create({ ...valid, title: 'by member' }, member.token);
    expect(byMember.status).toBe(201);
    expect((await patch(byMember.body.id, { content: 'edited' }, member.token)).body.version).toBe(2);
    expect((await versions(byMember.body.id, '', member.token)).body[0].created_by).toBe(member.id);
    expect((await create(valid)).status).toBe(403);

    // An editor group the member is not in: refused.
    const other = await h.group(owner.token, ws.id, { name: 'others', user_ids: [owner.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: other } });
    expect((await patch(byMember.body.id, { title: 'nope' }, member.token)).status).toBe(403);
    expect((await call('DELETE', `${docs()}/${byMember.body.id}`, { token: member.token })).status).toBe(403);
    expect((await get(byMember.body.id, member.token)).status).toBe(200);
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: null } });
    expect((await create(valid)).status).toBe(201);

    const stranger = await h.user('stranger');
    for (const r of [await list('', stranger.token), await get(d.id, stranger.token), await create(valid, stranger.token)]) {
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('FORBIDDEN');
    }
  });

  it("another workspace's document is 404; the header names the workspace and is required", async () => {
    const d = (await create({ ...valid, title: 'secret plan', content: 'CANARY-CONTENT' })).body;
    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'Theirs');
    const at = `${docs(theirs.id)}/${d.id}`;
    for (const r of [
      await call('GET', at, { token: stranger.token }),
      await call('GET', `${at}/versions`, { token: stranger.token }),
      await call('PATCH', at, { token: stranger.token, body: { content: 'overwritten' } }),
      await call('DELETE', at, { token: stranger.token }),
    ]) {
      expect(r.status).toBe(404);
      expect(JSON.stringify(r.body)).not.toContain('CANARY');
    }
    expect(JSON.stringify((await call('GET', docs(theirs.id), { token: stranger.token })).body)).not.toContain('secret plan');

    // The owner is a member of both: the header decides, the path's workspace id is ignored
    // (docs/http-api.md#where-the-workspace-comes-from).
    await h.addMember(stranger.token, theirs.id, owner.email, 'admin');
    expect((await call('GET', `${docs()}/${d.id}`, { token: owner.token, workspace: theirs.id })).status).toBe(404);
    expect((await call('GET', `${docs(theirs.id)}/${d.id}`, { token: owner.token, workspace: theirs.id })).status).toBe(404);
    expect((await call('PATCH', `${docs()}/${d.id}`, { token: owner.token, workspace: theirs.id, body: { title: 'x' } })).status).toBe(404);
    expect((await call('GET', `${docs(theirs.id)}/${d.id}`, { token: owner.token, workspace: ws.id })).status).toBe(200);
    expect((await h.call('GET', `${docs()}/${d.id}`, { token: owner.token })).status).toBe(400);
    const matching = await call('GET', `${docs()}/${d.id}`, { token: owner.token, workspace: ws.id });
    expect(matching.status).toBe(200);
    expect(matching.body.content).toBe('CANARY-CONTENT');
  });

  it('create, update and delete are audited in their transaction; reads are not', async () => {
    const d = (await create({ ...valid, title: 'audited' })).body;
    await patch(d.id, { status: 'final' });
    await patch(d.id, { content: 'new body' });
    await get(d.id);
    await call('DELETE', `${docs()}/${d.id}`, { token: owner.token });
    const audit = await h.call('GET', '/api/v1/audit-logs?limit=1000', { token: owner.token, workspace: ws.id });
    const entries = audit.body.filter((e: any) => e.resource_id === d.id).reverse();
    expect(entries.map((e: any) => e.action)).toEqual(['create_document', 'update_document', 'update_document', 'delete_document']);
    expect(entries.every((e: any) => e.resource_type === 'document' && e.user_id === owner.id)).toBe(true);
    expect(entries[0].details).toMatchObject({ title: 'audited', doc_type: 'guide', status: 'draft', version: 1 });
    expect(entries[1].details).toEqual({ changed: ['status'], version: 1, version_added: false });
    expect(entries[2].details).toEqual({ changed: ['content'], version: 2, version_added: true });
    expect(entries[3].details).toMatchObject({ title: 'audited' });
    expect(JSON.stringify(entries)).not.toContain('new body');

    // A refused change writes neither the change, its snapshot nor an audit entry.
    const kept = (await create(valid)).body;
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    expect((await patch(kept.id, { content: 'refused' }, member.token)).status).toBe(403);
    expect((await versions(kept.id)).body).toHaveLength(1);
    const after = await h.call('GET', '/api/v1/audit-logs?limit=1000', { token: owner.token, workspace: ws.id });
    expect(after.body.filter((e: any) => e.resource_id === kept.id).map((e: any) => e.action)).toEqual(['create_document']);
  });
  it('replace-section: the body under a heading, or one occurrence of old_text; a version and an audit entry; refusals change nothing', async () => {
    const content = '# Plan\n\nIntro.\n\n## Pricing\n\nOld price.\n\n## Risks\n\nSome.\n';
    const d = (await create({ ...valid, content })).body;
    const replace = (body: unknown, token = owner.token) => call('POST', `${docs()}/${d.id}/replace-section`, { token, body });
    const r = await replace({ heading: '## Pricing', content: 'New price.' });
    expect(r.status).toBe(200);
    expect(r.body.content).toBe('# Plan\n\nIntro.\n\n## Pricing\nNew price.\n\n## Risks\n\nSome.\n');
    expect(r.body.version).toBe(2);
    const t = await replace({ old_text: 'Some.', new_text: 'None known.' });
    expect(t.body.content).toContain('## Risks\n\nNone known.\n');
    expect((await versions(d.id)).body.map((v: any) => v.version)).toEqual([3, 2, 1]);

    for (const [body, detail] of [
      [{ heading: 'Nowhere', content: 'x' }, 'no heading'],
      [{ old_text: 'absent', new_text: 'x' }, 'does not occur'],
      [{ heading: 'Plan', old_text: 'Intro.', content: 'x', new_text: 'y' }, 'give heading with content'],
      [{ heading: 'Plan' }, 'give heading with content'],
    ] as const) {
      const bad = await replace(body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.code).toBe('VALIDATION_ERROR');
      expect(bad.body.details).toContain(detail);
    }
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    expect((await replace({ old_text: 'Intro.', new_text: 'Hijacked.' }, member.token)).status).toBe(403);
    expect((await call('POST', `${docs()}/01900000-0000-7000-8000-000000000000/replace-section`, { token: owner.token, body: { old_text: 'a', new_text: 'b' } })).status).toBe(404);
    expect((await get(d.id)).body.version).toBe(3);
    const audit = await h.call('GET', '/api/v1/audit-logs?action=replace_document_section', { token: owner.token, workspace: ws.id });
    expect(audit.body.map((e: any) => e.details)).toEqual([
      { changed: ['content'], by: 'old_text', version: 3, version_added: true },
      { changed: ['content'], by: 'heading', version: 2, version_added: true },
    ]);
  });
});
