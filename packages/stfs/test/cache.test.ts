import '@wds/testkit';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '@wds/crypto';
import { createDb, type Db, migrateToLatest, newId, asUuid } from '@wds/db';
import { createDatabase, ManualBus } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { freezeDeep, TopicCache } from '@wds/cache';
import {
  addVersion,
  createStf,
  deleteSecret,
  loadVersionWithSecrets,
  openSealedSecrets,
  openSecrets,
  resolveVersion,
  createRunCache,
  runnableVersion,
  softDeleteStf,
  upsertSecret,
} from '../src/index.js';


const counting = () => {
  let loads = 0;
  return {
    get loads() {
      return loads;
    },
    load:
      <V>(v: V) =>
      async () => {
        loads++;
        return v;
      },
  };
};

describe('TopicCache', () => {
  it('serves a loaded value until its workspace topic is published; other workspaces keep theirs', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    const c = counting();
    const size = () => 10;
    expect(await cache.throughWorkspace('a', 'k', c.load('a1'), size)).toBe('a1');
    expect(await cache.throughWorkspace('a', 'k', c.load('a2'), size)).toBe('a1');
    expect(await cache.throughWorkspace('b', 'k', c.load('b1'), size)).toBe('b1');
    expect(c.loads).toBe(2);
    bus.invalidate('ws:a');
    expect(await cache.throughWorkspace('a', 'k', c.load('a3'), size)).toBe('a3');
    expect(await cache.throughWorkspace('b', 'k', c.load('b2'), size)).toBe('b1');
    bus.invalidate('user:someone');
    expect(await cache.throughWorkspace('a', 'k', c.load('a4'), size)).toBe('a3');
    bus.invalidate('*');
    expect(await cache.throughWorkspace('a', 'k', c.load('a5'), size)).toBe('a5');
    expect(await cache.throughWorkspace('b', 'k', c.load('b3'), size)).toBe('b3');
  });

  it('keeps nothing loaded while an invalidation happened, and serves nothing while the bus is down', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    // The load read the state from before a change whose invalidation arrived meanwhile.
    const racing = await cache.throughWorkspace('a', 'k', async () => {
      bus.invalidate('ws:a');
      return 'old';
    }, () => 1);
    expect(racing).toBe('old');
    expect(await cache.throughWorkspace('a', 'k', async () => 'new', () => 1)).toBe('new');
    expect(cache.size).toBe(1);

    bus.healthy = false;
    expect(await cache.throughWorkspace('a', 'k', async () => 'read while down', () => 1)).toBe('read while down');
    expect(await cache.throughWorkspace('a', 'k', async () => 'again', () => 1)).toBe('again');
    bus.healthy = true;
    expect(await cache.throughWorkspace('a', 'k', async () => 'later', () => 1)).toBe('new');
  });

  it('expires entries after ttlMs, caches nothing with ttlMs 0, and never fails a load into the cache', async () => {
    const bus = new ManualBus();
    const short = new TopicCache(bus, { ttlMs: 20 });
    vi.useFakeTimers({ toFake: ['Date'] }); // the TTL is measured with Date.now(): a frozen clock, moved by hand
    try {
      await short.throughWorkspace('a', 'k', async () => 1, () => 1);
      vi.setSystemTime(Date.now() + 19);
      expect(await short.throughWorkspace('a', 'k', async () => 2, () => 1)).toBe(1);
      vi.setSystemTime(Date.now() + 21);
      expect(await short.throughWorkspace('a', 'k', async () => 2, () => 1)).toBe(2);
    } finally {
      vi.useRealTimers();
    }


    const none = new TopicCache(bus, { ttlMs: 0 });
    await none.throughWorkspace('a', 'k', async () => 1, () => 1);
    expect(none.size).toBe(0);

    await expect(short.throughWorkspace('a', 'missing', async () => Promise.reject(new Error('nope')), () => 1)).rejects.toThrow('nope');
    expect(await short.throughWorkspace('a', 'missing', async () => 'found', () => 1)).toBe('found');
  });

  it('holds at most maxBytes, dropping the least recently used, and keeps no entry over an eighth of it', async () => {
    const cache = new TopicCache(new ManualBus(), { ttlMs: 60_000, maxBytes: 800 });
    await cache.throughWorkspace('a', 'big', async () => 'big', () => 101);
    expect(cache.size).toBe(0);
    for (const k of ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8']) await cache.throughWorkspace('a', k, async () => k, () => 100);
    expect(cache.bytes).toBe(800);
    await cache.throughWorkspace('a', 'k1', async () => 'reloaded', () => 100); // a hit: k1 is now the most recent
    await cache.throughWorkspace('a', 'k9', async () => 'k9', () => 100);
    expect(cache.bytes).toBe(800);
    expect(await cache.throughWorkspace('a', 'k1', async () => 'reloaded', () => 100)).toBe('k1');
    expect(await cache.throughWorkspace('a', 'k2', async () => 'reloaded', () => 100)).toBe('reloaded');
  });

  it('createRunCache: a cache with a TTL, none with a TTL of 0', async () => {
    const bus = new ManualBus();
    const cache = createRunCache(bus, 1000);
    expect(cache).toBeInstanceOf(TopicCache);
    expect(await cache?.throughWorkspace('a', 'k', async () => 1)).toBe(1);
    expect(await cache?.throughWorkspace('a', 'k', async () => 2)).toBe(1);
    expect(createRunCache(bus, 0)).toBeUndefined();
  });

  it('freezeDeep freezes objects and arrays all the way down, and leaves byte buffers usable', () => {
    const v = freezeDeep({ a: { b: [1, { c: 2 }] }, code: Buffer.from('x') });
    expect(Object.isFrozen(v.a.b[1])).toBe(true);
    expect(() => {
      (v.a.b as unknown[]).push(3);
    }).toThrow();
    expect(v.code.toString()).toBe('x');
  });
});

describe('the run cache on the platform tables', () => {
  let db: Db;
  /** A second connection pool: another process's changes. */
  let other: Db;
  const A = newId();
  const B = newId();
  const box = SecretBox.fromBase64(randomBytes(32).toString('base64'));
  const js = (s: string) => ({ version: s, runtime: 'javascript' as const, code: Buffer.from(`return ${JSON.stringify(s)}`) });

  beforeAll(async () => {
    const url = await createDatabase(inject('pgServerUrl'), { prefix: 'stfcache' });
    db = createDb(url, { max: 2 }).db;
    other = createDb(url, { max: 1 }).db;
    await migrateToLatest(db);
    await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
  });
  afterAll(async () => {
    await db.destroy();
    await other.destroy();
  });

  it('one query reads what resolveVersion and openSecrets read', async () => {
    const { stf, version } = await createStf(db, A, { name: 'one', createdBy: null, version: js('1') });
    await upsertSecret(db, box, stf.id, 'TOKEN', 's3cret');
    const v = await loadVersionWithSecrets(db, A, { stfId: stf.id });
    expect(v.version).toEqual(await resolveVersion(db, A, { stfId: stf.id }));
    expect(openSealedSecrets(box, stf.id, v.sealed_secrets)).toEqual(await openSecrets(db, box, stf.id));
    expect((await loadVersionWithSecrets(db, A, { stfVersionId: version.id })).version.id).toBe(version.id);
    await expect(loadVersionWithSecrets(db, B, { stfVersionId: version.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(loadVersionWithSecrets(db, A, { stfVersionId: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a change made in this process is seen by the very next read', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    const read = async (id: string) => {
      const v = await runnableVersion(db, cache, A, { stfId: id });
      return { version: v.version.version, env: openSealedSecrets(box, id, v.sealed_secrets) };
    };
    const { stf } = await createStf(db, A, { name: 'here', createdBy: null, version: js('1') });
    expect(await read(stf.id)).toEqual({ version: '1', env: {} });
    expect(cache.size).toBeGreaterThan(0);
    // Each change, then what the route pipeline does once it has committed: publish the workspace's topic.
    const changed = () => bus.invalidate(`ws:${A}`);

    await addVersion(db, A, asUuid(stf.id), js('2'), null);
    changed();
    expect(await read(stf.id)).toEqual({ version: '2', env: {} });
    await upsertSecret(db, box, stf.id, 'K', 'v1');
    changed();
    expect(await read(stf.id)).toEqual({ version: '2', env: { K: 'v1' } });
    await upsertSecret(db, box, stf.id, 'K', 'v2');
    changed();
    expect(await read(stf.id)).toEqual({ version: '2', env: { K: 'v2' } });
    await deleteSecret(db, stf.id, 'K');
    changed();
    expect(await read(stf.id)).toEqual({ version: '2', env: {} });
    await softDeleteStf(db, A, asUuid(stf.id));
    changed();
    await expect(read(stf.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a change committed by another process is seen once its message arrives; a change of another workspace drops nothing', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    const { stf } = await createStf(db, A, { name: 'there', createdBy: null, version: js('1') });
    const { stf: inB } = await createStf(db, B, { name: 'b', createdBy: null, version: js('b1') });
    const newest = async (ws: string, id: string) => (await runnableVersion(db, cache, ws, { stfId: id })).version.version;
    expect(await newest(A, stf.id)).toBe('1');
    expect(await newest(B, inB.id)).toBe('b1');

    // The other process commits a new version and its secret on its own connection...
    await addVersion(other, A, asUuid(stf.id), js('2'), null);
    await upsertSecret(other, box, stf.id, 'K', 'from-elsewhere');
    await addVersion(other, B, asUuid(inB.id), js('b2'), null);
    // ...and its NOTIFY reaches this process's listener, which publishes the topic here.
    bus.invalidate(`ws:${A}`);
    const v = await runnableVersion(db, cache, A, { stfId: stf.id });
    expect(v.version.version).toBe('2');
    expect(openSealedSecrets(box, stf.id, v.sealed_secrets)).toEqual({ K: 'from-elsewhere' });
    // B's message has not arrived: B's entry is still the cached one, which shows what the topic guards.
    expect(await newest(B, inB.id)).toBe('b1');
    bus.invalidate(`ws:${B}`);
    expect(await newest(B, inB.id)).toBe('b2');
  });

  it('with the listener down every read goes to the database', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    const { stf } = await createStf(db, A, { name: 'down', createdBy: null, version: js('1') });
    expect((await runnableVersion(db, cache, A, { stfId: stf.id })).version.version).toBe('1');
    bus.healthy = false;
    await addVersion(other, A, asUuid(stf.id), js('2'), null);
    expect((await runnableVersion(db, cache, A, { stfId: stf.id })).version.version).toBe('2');
  });

  it('keys: by version id, by label and the newest are different entries, and a workspace never reads another one\'s', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    const { stf, version } = await createStf(db, A, { name: 'keys', createdBy: null, version: js('1') });
    await addVersion(db, A, asUuid(stf.id), js('2'), null);
    expect((await runnableVersion(db, cache, A, { stfVersionId: version.id })).version.version).toBe('1');
    expect((await runnableVersion(db, cache, A, { stfId: stf.id, label: '1' })).version.version).toBe('1');
    expect((await runnableVersion(db, cache, A, { stfId: stf.id })).version.version).toBe('2');
    await expect(runnableVersion(db, cache, B, { stfVersionId: version.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(runnableVersion(db, cache, B, { stfId: stf.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const cached = await runnableVersion(db, cache, A, { stfId: stf.id });
    expect(Object.isFrozen(cached.version)).toBe(true);
  });
});
