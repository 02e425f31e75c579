import '@wds/testkit';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createDb, migrateToLatest, newId, asUuid, type Uuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, expectTypeOf } from 'vitest';
import {
  type Sealer,
  activateChatTemplate,
  charCount,
  createChatTemplate,
  createPromptRule,
  createSkill,
  credentialBinding,
  deactivateChatTemplates,
  deleteChatTemplate,
  deleteCredential,
  deletePromptRule,
  deleteSkill,
  deleteTitleRule,
  getActiveChatTemplate,
  getChatTemplate,
  getDashboardEnabled,
  getSkill,
  getTitleRule,
  listChatTemplates,
  listCredentials,
  listPromptRules,
  listSkills,
  openCredential,
  putCredential,
  putTitleRule,
  setDashboardEnabled,
  updateChatTemplate,
  updatePromptRule,
  updateSkill,
} from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const A = newId();
const B = newId();
const page = { limit: 100, offset: 0 };

/** AES-256-GCM with associated data, as the service's SecretBox does it. */
const key = randomBytes(32);
const box: Sealer = {
  seal(plaintext, associated) {
    const nonce = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, nonce);
    c.setAAD(Buffer.from(associated));
    const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return Buffer.concat([nonce, c.getAuthTag(), body]);
  },
  open(sealed, associated) {
    const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
    d.setAAD(Buffer.from(associated));
    d.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([d.update(sealed.subarray(28)), d.final()]).toString('utf8');
  },
};

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'setup' }), { max: 4 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
});
afterAll(() => db.destroy());

describe('limits', () => {
  it('counts characters, not UTF-16 units', () => {
    expect(charCount('abc')).toBe(3);
    expect(charCount('😀😀')).toBe(2);
    expect(charCount('é')).toBe(1);
  });
});

describe('prompt rules', () => {
  it('create, list, update, delete; scoped to the workspace', async () => {
    const r = await createPromptRule(db, A, { content: 'Be brief.', createdBy: null });
    const r2 = await createPromptRule(db, A, { content: 'x'.repeat(50_000), createdBy: null });
    expect((await listPromptRules(db, A, page)).map((x) => x.id)).toEqual([r.id, r2.id]);
    expect(await listPromptRules(db, B, page)).toEqual([]);
    await expect(updatePromptRule(db, B, asUuid(r.id), { content: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(deletePromptRule(db, B, asUuid(r.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const u = await updatePromptRule(db, A, asUuid(r.id), { content: 'Be very brief.' });
    expect(u.content).toBe('Be very brief.');
    await expect(createPromptRule(db, A, { content: 'x'.repeat(50_001), createdBy: null })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(createPromptRule(db, A, { content: '  ', createdBy: null })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    // 50 000 emoji are 50 000 characters (100 000 UTF-16 units).
    await createPromptRule(db, A, { content: '😀'.repeat(50_000), createdBy: null });
    await deletePromptRule(db, A, asUuid(r.id));
    await expect(deletePromptRule(db, A, asUuid(r.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // A text that is not a UUID never reaches it: the id is a Uuid (the route layer answers 404 for one in a path).
    expectTypeOf(updatePromptRule).parameter(2).toEqualTypeOf<Uuid>();
  });
});

describe('skills', () => {
  it('CRUD, scoped to the workspace', async () => {
    const s = await createSkill(db, A, { name: 'sql', description: 'writes SQL', content: 'SELECT…', createdBy: null });
    expect(await getSkill(db, A, asUuid(s.id))).toEqual(s);
    await expect(getSkill(db, B, asUuid(s.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // A text that is not a UUID never reaches it: the id is a Uuid (the route layer answers 404 for one in a path).
    expectTypeOf(getSkill).parameter(2).toEqualTypeOf<Uuid>();
    const u = await updateSkill(db, A, asUuid(s.id), { description: null, name: 'sql2' });
    expect(u).toMatchObject({ name: 'sql2', description: null, content: 'SELECT…' });
    await expect(updateSkill(db, B, asUuid(s.id), { name: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(createSkill(db, A, { name: 'n'.repeat(256), content: 'c', createdBy: null })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await listSkills(db, A, page)).map((x) => x.id)).toEqual([s.id]);
    await deleteSkill(db, A, asUuid(s.id));
    await expect(getSkill(db, A, asUuid(s.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('title rule', () => {
  it('none, put, replace, empty deletes, delete', async () => {
    expect(await getTitleRule(db, A)).toEqual({ workspace_id: A, content: null, updated_by: null, updated_at: null });
    const p = await putTitleRule(db, A, 'Short titles', null);
    expect(p.rule.content).toBe('Short titles');
    expect((await putTitleRule(db, A, 't'.repeat(2000), null)).rule.content).toHaveLength(2000);
    await expect(putTitleRule(db, A, 't'.repeat(2001), null)).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await getTitleRule(db, B)).content).toBeNull();
    expect(await putTitleRule(db, A, '', null)).toMatchObject({ deleted: true, rule: { content: null } });
    expect(await putTitleRule(db, A, '', null)).toMatchObject({ deleted: false });
    await expect(deleteTitleRule(db, A)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await putTitleRule(db, A, 'again', null);
    await deleteTitleRule(db, A);
    expect((await getTitleRule(db, A)).content).toBeNull();
  });
});

describe('chat templates', () => {
  it('CRUD; activation leaves exactly one active; deactivate clears', async () => {
    const W = newId();
    await db.insertInto('platform.workspaces').values({ id: W, name: 'w' }).execute();
    const t1 = await createChatTemplate(db, W, { name: 'one', content: 'c1', createdBy: null });
    const t2 = await createChatTemplate(db, W, { name: 'two', content: 'c2', createdBy: null });
    expect(t1.is_active).toBe(false);
    expect(await getActiveChatTemplate(db, W)).toBeNull();

    const a1 = await db.transaction().execute((tx) => activateChatTemplate(tx, W, asUuid(t1.id)));
    expect(a1).toMatchObject({ template: { id: t1.id, is_active: true }, deactivated: [] });
    const a2 = await db.transaction().execute((tx) => activateChatTemplate(tx, W, asUuid(t2.id)));
    expect(a2.deactivated).toEqual([t1.id]);
    expect((await listChatTemplates(db, W, page)).map((t) => [t.name, t.is_active])).toEqual([
      ['one', false],
      ['two', true],
    ]);
    // Activating the active one again changes nothing.
    expect((await db.transaction().execute((tx) => activateChatTemplate(tx, W, asUuid(t2.id)))).deactivated).toEqual([]);
    await expect(activateChatTemplate(db, B, asUuid(t1.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });

    expect(await db.transaction().execute((tx) => deactivateChatTemplates(tx, W))).toEqual([t2.id]);
    expect(await getActiveChatTemplate(db, W)).toBeNull();
    expect(await db.transaction().execute((tx) => deactivateChatTemplates(tx, W))).toEqual([]);

    const u = await updateChatTemplate(db, W, asUuid(t1.id), { content: 'c1b' });
    expect(u).toMatchObject({ name: 'one', content: 'c1b' });
    await expect(getChatTemplate(db, B, asUuid(t1.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await deleteChatTemplate(db, W, asUuid(t1.id));
    await expect(getChatTemplate(db, W, asUuid(t1.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('concurrent activations of different templates end with exactly one active', async () => {
    const W = newId();
    await db.insertInto('platform.workspaces').values({ id: W, name: 'w' }).execute();
    const ts = await Promise.all([1, 2, 3, 4].map((i) => createChatTemplate(db, W, { name: `t${i}`, content: 'c', createdBy: null })));
    const results = await Promise.allSettled(
      [...ts, ...ts].map((t) => db.transaction().execute((tx) => activateChatTemplate(tx, W, asUuid(t.id)))),
    );
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    const active = (await listChatTemplates(db, W, page)).filter((t) => t.is_active);
    expect(active).toHaveLength(1);
  });
});

describe('dashboard flag', () => {
  it('off by default; set; unknown workspace 404', async () => {
    expect(await getDashboardEnabled(db, A)).toEqual({ enabled: false });
    expect(await setDashboardEnabled(db, A, true)).toEqual({ enabled: true });
    expect(await getDashboardEnabled(db, A)).toEqual({ enabled: true });
    expect(await getDashboardEnabled(db, B)).toEqual({ enabled: false });
    await expect(setDashboardEnabled(db, newId(), true)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('credentials', () => {
  it('sealed at rest, bound to workspace and provider; listed by name only', async () => {
    const value = 'canary-token-123';
    const v = await putCredential(db, box, A, 'drive_workspace', value);
    expect(v.provider).toBe('drive_workspace');
    expect(JSON.stringify(v)).not.toContain(value);
    const row = await db.selectFrom('platform.workspace_credentials').selectAll().where('workspace_id', '=', A).executeTakeFirstOrThrow();
    expect(row.sealed_value.toString('latin1')).not.toContain(value);
    expect(await openCredential(db, box, A, 'drive_workspace')).toBe(value);
    // Copied to another workspace, it does not open.
    expect(() => box.open(row.sealed_value, credentialBinding(B, 'drive_workspace'))).toThrow();

    await putCredential(db, box, A, 'drive_workspace', 'second');
    expect(await openCredential(db, box, A, 'drive_workspace')).toBe('second');
    await putCredential(db, box, A, 'github', '{"token":"x"}');
    expect((await listCredentials(db, A, page)).map((c) => Object.keys(c).sort())).toEqual([
      ['provider', 'updated_at'],
      ['provider', 'updated_at'],
    ]);
    expect((await listCredentials(db, A, page)).map((c) => c.provider)).toEqual(['drive_workspace', 'github']);
    expect(await listCredentials(db, B, page)).toEqual([]);
    expect(await openCredential(db, box, B, 'drive_workspace')).toBeUndefined();

    for (const bad of ['Drive', '1x', 'a-b', '', 'x'.repeat(65)]) {
      await expect(putCredential(db, box, A, bad, 'v')).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    await expect(putCredential(db, box, A, 'p', '')).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(putCredential(db, box, A, 'p', 'x'.repeat(64 * 1024 + 1))).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(putCredential(db, box, newId(), 'p', 'v')).rejects.toMatchObject({ code: 'NOT_FOUND' });

    await deleteCredential(db, A, 'github');
    await expect(deleteCredential(db, A, 'github')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(deleteCredential(db, newId(), 'github')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
