import '@wds/testkit';
import { createDb, migrateToLatest, newId, asUuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type NewEffectVersion,
  addEffectVersion,
  createEffect,
  getEffect,
  listEffectVersions,
  listEffects,
  newestEffectVersions,
  ownNewestEffectVersions,
  resolveEffectVersion,
  resolveStepEffectVersions,
  softDeleteEffect,
  updateEffect,
} from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const A = newId();
const B = newId();
const page = { limit: 100, offset: 0 };

const call = (version: string, over: Partial<NewEffectVersion> = {}): NewEffectVersion => ({
  version,
  url: 'https://api.example.com/orders',
  method: 'POST',
  header_mappings: [{ source: { type: 'Const', value: 'application/json' }, target: 'Accept' }],
  body_mappings: [{ source: { type: 'Variable', value: '$.order.id' }, target: 'order.id' }],
  ...over,
});

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'effects' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
});
afterAll(() => db.destroy());

describe('effects and versions', () => {
  it('create with a first version, read back every field, defaults', async () => {
    const { effect, version } = await createEffect(db, A, {
      name: 'notify',
      description: 'tells the shop',
      createdBy: null,
      version: call('1.0.0', {
        query_mappings: [{ source: { type: 'Variable', value: 'items[0].sku' }, target: 'sku' }],
        input_schema: { type: 'object' },
        timeout_secs: 10,
        retries: 2,
      }),
    });
    expect(effect).toMatchObject({ workspace_id: A, name: 'notify', description: 'tells the shop' });
    expect(effect.latest_version).toEqual({ id: version.id, version: '1.0.0', method: 'POST', url: 'https://api.example.com/orders' });
    expect(version).toMatchObject({
      effect_id: effect.id,
      version: '1.0.0',
      url: 'https://api.example.com/orders',
      method: 'POST',
      header_mappings: [{ source: { type: 'Const', value: 'application/json' }, target: 'Accept' }],
      body_mappings: [{ source: { type: 'Variable', value: '$.order.id' }, target: 'order.id' }],
      query_mappings: [{ source: { type: 'Variable', value: 'items[0].sku' }, target: 'sku' }],
      input_schema: { type: 'object' },
      timeout_secs: 10,
      retries: 2,
    });
    expect(new Date(version.created_at).toISOString()).toBe(version.created_at);

    const bare = await createEffect(db, A, { name: 'bare', createdBy: null, version: call('1', { method: 'GET', body_mappings: [] }) });
    expect(bare.effect.description).toBeNull();
    expect(bare.version).toMatchObject({ query_mappings: [], body_mappings: [], input_schema: null, timeout_secs: null, retries: 0 });
  });

  it('versions: newest first, duplicate label 409, resolve by id, label or newest', async () => {
    const { effect, version: v1 } = await createEffect(db, A, { name: 'versions', createdBy: null, version: call('1.0.0') });
    await expect(addEffectVersion(db, A, asUuid(effect.id), call('1.0.0'), null)).rejects.toMatchObject({ code: 'CONFLICT' });
    const v2 = await addEffectVersion(db, A, asUuid(effect.id), call('1.1.0', { url: 'https://api.example.com/v2/orders', method: 'PUT' }), null);
    const v3 = await addEffectVersion(db, A, asUuid(effect.id), call('0.9.0'), null);
    expect((await listEffectVersions(db, A, asUuid(effect.id), page)).map((v) => v.version)).toEqual(['0.9.0', '1.1.0', '1.0.0']);
    expect((await listEffectVersions(db, A, asUuid(effect.id), { limit: 1, offset: 1 })).map((v) => v.id)).toEqual([v2.id]);
    // "Latest" is the newest added, not the highest label.
    expect((await getEffect(db, A, asUuid(effect.id))).latest_version).toMatchObject({ id: v3.id, version: '0.9.0' });

    expect((await resolveEffectVersion(db, A, { effectId: effect.id })).id).toBe(v3.id);
    expect((await resolveEffectVersion(db, A, { effectId: effect.id, label: '1.1.0' })).id).toBe(v2.id);
    expect(await resolveEffectVersion(db, A, { effectVersionId: v1.id })).toEqual(v1);
    await expect(resolveEffectVersion(db, A, { effectId: effect.id, label: '7' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, A, { effectVersionId: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, A, { effectId: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, A, { effectVersionId: newId() })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('update changes name and description only; list shows the change', async () => {
    const { effect, version } = await createEffect(db, A, { name: 'before', createdBy: null, version: call('1') });
    const renamed = await updateEffect(db, A, asUuid(effect.id), { name: 'after' });
    expect(renamed).toMatchObject({ name: 'after', description: null, latest_version: { id: version.id } });
    expect(renamed.updated_at >= effect.updated_at).toBe(true);
    expect((await updateEffect(db, A, asUuid(effect.id), { description: 'd' })).name).toBe('after');
    expect((await updateEffect(db, A, asUuid(effect.id), { description: null })).description).toBeNull();
    expect((await listEffects(db, A, page)).find((e) => e.id === effect.id)?.name).toBe('after');
    await expect(updateEffect(db, A, newId(), { name: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('list: creation order, paged, each with its latest version', async () => {
    const ws = newId();
    await db.insertInto('platform.workspaces').values({ id: ws, name: 'list' }).execute();
    const a = await createEffect(db, ws, { name: 'a', createdBy: null, version: call('1') });
    const b = await createEffect(db, ws, { name: 'b', createdBy: null, version: call('1') });
    const b2 = await addEffectVersion(db, ws, asUuid(b.effect.id), call('2', { method: 'DELETE' }), null);
    const all = await listEffects(db, ws, page);
    expect(all.map((e) => e.name)).toEqual(['a', 'b']);
    expect(all[0]?.latest_version?.id).toBe(a.version.id);
    expect(all[1]?.latest_version).toMatchObject({ id: b2.id, version: '2', method: 'DELETE' });
    expect((await listEffects(db, ws, { limit: 1, offset: 1 })).map((e) => e.name)).toEqual(['b']);
  });

  it('soft delete hides the effect and its versions; resolve refuses them', async () => {
    const { effect, version } = await createEffect(db, A, { name: 'doomed', createdBy: null, version: call('1') });
    expect((await softDeleteEffect(db, A, asUuid(effect.id))).id).toBe(effect.id);
    await expect(getEffect(db, A, asUuid(effect.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await listEffects(db, A, page)).map((e) => e.id)).not.toContain(effect.id);
    await expect(listEffectVersions(db, A, asUuid(effect.id), page)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(addEffectVersion(db, A, asUuid(effect.id), call('2'), null)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(updateEffect(db, A, asUuid(effect.id), { name: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeleteEffect(db, A, asUuid(effect.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, A, { effectVersionId: version.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, A, { effectId: effect.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // The row stays, marked.
    const row = await db.selectFrom('platform.effects').select('deleted_at').where('id', '=', effect.id).executeTakeFirstOrThrow();
    expect(row.deleted_at).toBeInstanceOf(Date);
  });

  it('another workspace sees none of it', async () => {
    const { effect, version } = await createEffect(db, A, { name: 'private', createdBy: null, version: call('1') });
    await expect(getEffect(db, B, asUuid(effect.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(updateEffect(db, B, asUuid(effect.id), { name: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeleteEffect(db, B, asUuid(effect.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(listEffectVersions(db, B, asUuid(effect.id), page)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(addEffectVersion(db, B, asUuid(effect.id), call('2'), null)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, B, { effectVersionId: version.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, B, { effectId: effect.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveEffectVersion(db, B, { effectId: effect.id, label: '1' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await listEffects(db, B, page)).toEqual([]);
    expect((await getEffect(db, A, asUuid(effect.id))).name).toBe('private');
  });
});

describe('the versions workflow steps run', () => {
  it('pinned: exactly the one named; else the newest of its effect; gone or foreign: nothing', async () => {
    const [ada, bob] = [newId(), newId()];
    await db.insertInto('platform.users').values([{ id: ada, email: `${ada}@x.test`, name: 'Ada' }, { id: bob, email: `${bob}@x.test`, name: 'Bob' }]).execute();
    const { effect, version: v1 } = await createEffect(db, A, { name: 'steps', createdBy: ada, version: call('1', { url: 'https://api.example.com/1' }) });
    const v2 = await addEffectVersion(db, A, asUuid(effect.id), call('2', { url: 'https://api.example.com/2', timeout_secs: 7, retries: 1 }), bob);
    const v3 = await addEffectVersion(db, A, asUuid(effect.id), call('3', { url: 'https://api.example.com/3' }), ada);
    const { version: foreign } = await createEffect(db, B, { name: 'steps', createdBy: null, version: call('1') });

    const got = await resolveStepEffectVersions(db, A, [
      { id: v1.id, pin: false },
      { id: v2.id, pin: true },
      { id: foreign.id, pin: true },
    ]);
    expect(got.map((r) => r && [r.effect_id, r.effect_version_id, r.version, r.spec.url])).toEqual([
      [effect.id, v3.id, '3', 'https://api.example.com/3'],
      [effect.id, v2.id, '2', 'https://api.example.com/2'],
      undefined,
    ]);
    expect(got[1]?.spec).toEqual({
      url: 'https://api.example.com/2',
      method: 'POST',
      header_mappings: call('2').header_mappings,
      body_mappings: call('2').body_mappings,
      query_mappings: v2.query_mappings,
      timeout_secs: 7,
      retries: 1,
    });
    expect(await resolveStepEffectVersions(db, A, [])).toEqual([]);

    expect(await newestEffectVersions(db, A, [v1.id, v2.id, foreign.id, 'not-a-uuid'])).toEqual({ [v1.id]: v3.id, [v2.id]: v3.id });
    expect(await ownNewestEffectVersions(db, A, { [v1.id]: v1.id, [foreign.id]: foreign.id }, bob)).toEqual({ [v1.id]: v2.id });
    expect(await ownNewestEffectVersions(db, A, { [v1.id]: v1.id }, ada)).toEqual({ [v1.id]: v3.id });
    expect(await ownNewestEffectVersions(db, A, { [v2.id]: v1.id }, null)).toEqual({ [v2.id]: v1.id });

    await softDeleteEffect(db, A, asUuid(effect.id));
    expect(await resolveStepEffectVersions(db, A, [{ id: v1.id, pin: true }])).toEqual([undefined]);
    expect(await newestEffectVersions(db, A, [v1.id])).toEqual({});
    expect(await ownNewestEffectVersions(db, A, { [v1.id]: v1.id }, ada)).toEqual({});
  });
});
