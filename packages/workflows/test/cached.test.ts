import '@wds/testkit';
import { createDb, type Db, migrateToLatest, newId, asUuid } from '@wds/db';
import { TopicCache } from '@wds/cache';
import { addVersion, createStf } from '@wds/stfs';
import { createDatabase, ManualBus } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cachedSteps, cachedWorkflow } from '../src/cached.js';
import { createWorkflow, softDeleteWorkflow, updateWorkflow } from '../src/index.js';


let db: Db;
/** Another process's connection. */
let other: Db;
const A = newId();
const B = newId();
const js = (s: string) => ({ version: s, runtime: 'javascript' as const, code: Buffer.from(s) });
const codes = async (cache: TopicCache, ws: string, def: Parameters<typeof cachedSteps>[3]) =>
  (await cachedSteps(db, cache, ws, def)).stfs.map((s) => s?.code.toString() ?? null);

beforeAll(async () => {
  const url = await createDatabase(inject('pgServerUrl'), { prefix: 'wfcache' });
  db = createDb(url, { max: 4 }).db;
  other = createDb(url, { max: 1 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
});
afterAll(async () => {
  await db.destroy();
  await other.destroy();
});

describe('the cached steps of an execution', () => {
  it('pinned and unpinned references are different entries; a new version is seen after the change (here or elsewhere)', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    const { stf, version } = await createStf(db, A, { name: 's', createdBy: null, version: js('one') });
    const unpinned = { stf_steps: [{ stf_version_id: version.id, pin_version: false, input_mappings: [] }], effect_steps: [] };
    const pinned = { stf_steps: [{ stf_version_id: version.id, pin_version: true, input_mappings: [] }], effect_steps: [] };
    expect(await codes(cache, A, unpinned)).toEqual(['one']);
    await addVersion(db, A, asUuid(stf.id), js('two'), null);
    expect(await codes(cache, A, unpinned)).toEqual(['one']); // nobody published the change yet
    bus.invalidate(`ws:${A}`);
    expect(await codes(cache, A, unpinned)).toEqual(['two']);
    expect(await codes(cache, A, pinned)).toEqual(['one']);

    await addVersion(other, A, asUuid(stf.id), js('three'), null);
    await other.insertInto('platform.stf_secrets').values({ stf_id: stf.id, env_key: 'K', sealed_value: Buffer.from('sealed') }).execute();
    bus.invalidate(`ws:${A}`);
    const steps = await cachedSteps(db, cache, A, unpinned);
    expect(steps.stfs[0]?.code.toString()).toBe('three');
    expect(steps.stfs[0]?.sealed_secrets.map((s) => s.env_key)).toEqual(['K']);
    expect(Object.isFrozen(steps.stfs[0])).toBe(true);
  });

  it("another workspace resolves nothing of this one's, cached or not", async () => {
    const cache = new TopicCache(new ManualBus(), { ttlMs: 60_000 });
    const { version } = await createStf(db, A, { name: 's', createdBy: null, version: js('mine') });
    const def = { stf_steps: [{ stf_version_id: version.id, pin_version: false, input_mappings: [] }], effect_steps: [] };
    expect(await codes(cache, A, def)).toEqual(['mine']);
    expect(await codes(cache, B, def)).toEqual([null]);
  });
});

describe('the cached workflow', () => {
  it('an update and a deletion are seen once published; a missing workflow is never cached', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    const w = await createWorkflow(db, A, { name: 'w', input_steps: [], stf_steps: [], effect_steps: [] }, null);
    expect((await cachedWorkflow(db, cache, A, asUuid(w.id))).name).toBe('w');
    await updateWorkflow(other, A, asUuid(w.id), { name: 'renamed' }, { input_schema: null, input_steps: [], stf_steps: [], effect_steps: [] }, newId());
    bus.invalidate(`ws:${A}`);
    expect((await cachedWorkflow(db, cache, A, asUuid(w.id))).name).toBe('renamed');
    await expect(cachedWorkflow(db, cache, B, asUuid(w.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await softDeleteWorkflow(db, A, asUuid(w.id));
    bus.invalidate(`ws:${A}`);
    await expect(cachedWorkflow(db, cache, A, asUuid(w.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const missing = newId();
    await expect(cachedWorkflow(db, cache, A, missing)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(cache.size).toBe(0);
  });
});
