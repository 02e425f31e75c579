import { createDatabase, dropDatabase, ManualBus } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { InvalidationBus, TopicCache, workspaceTopic } from '../src/index.js';

let bus: InvalidationBus;
let pool: pg.Pool;
beforeAll(async () => {
  bus = new InvalidationBus(inject('pgServerUrl'));
  await bus.start();
  pool = new pg.Pool({ connectionString: inject('pgServerUrl'), max: 2 });
});
afterAll(async () => {
  await bus.stop();
  await pool.end();
});

const waitFor = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
};

describe('TopicCache', () => {
  it('serves hits until a topic published with NOTIFY drops them', async () => {
    const cache = new TopicCache<number>(bus, { ttlMs: 60_000 });
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.through('k', ['ws:1'], load)).toBe(1);
    expect(await cache.through('k', ['ws:1'], load)).toBe(1);
    await pool.query(InvalidationBus.notifySql('ws:2', (s) => `'${s}'`));
    await pool.query(`SELECT pg_notify('wds_invalidate', 'ws:1')`);
    await waitFor(() => cache.get('k') === undefined);
    expect(await cache.through('k', ['ws:1'], load)).toBe(2);
  });

  it('does not keep a value loaded while an invalidation happened', async () => {
    const cache = new TopicCache<string>(bus, { ttlMs: 60_000 });
    const value = await cache.through('k', ['ws:1'], async () => {
      bus.invalidate('ws:9');
      return 'read before the change';
    });
    expect(value).toBe('read before the change');
    expect(cache.get('k')).toBeUndefined();
  });

  it('expires entries and caches nothing with ttl 0', async () => {
    vi.useFakeTimers({ toFake: ['Date'] }); // the TTL is measured with Date.now(): a frozen clock, moved by hand
    try {
      const short = new TopicCache<number>(bus, { ttlMs: 30 });
      await short.through('k', [], async () => 1);
      vi.setSystemTime(Date.now() + 29);
      expect(short.get('k')).toBe(1);
      vi.setSystemTime(Date.now() + 11);
      expect(short.get('k')).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
    const off = new TopicCache<number>(bus, { ttlMs: 0 });
    await off.through('k', [], async () => 1);
    expect(off.size).toBe(0);
  });

  it('reconnects the listener when its connection is killed, bypassing caches until then', async () => {
    // Its own database, so that only this bus's connection is killed (the server may be shared with other runs).
    const url = await createDatabase(inject('pgServerUrl'), { prefix: 'cache_bus' });
    const database = decodeURIComponent(new URL(url).pathname.slice(1));
    const logged: string[] = [];
    const own = new InvalidationBus(url, (msg) => logged.push(msg));
    await own.start();
    try {
      const cache = new TopicCache<number>(own, { ttlMs: 60_000 });
      await cache.through('k', ['ws:1'], async () => 1);
      const { rows } = await pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'wds-cache-bus' AND datname = $1",
        [database],
      );
      expect(rows.length).toBeGreaterThan(0);
      await waitFor(() => !own.healthy);
      expect(cache.get('k')).toBeUndefined();
      await waitFor(() => own.healthy);
      expect(logged).toEqual([
        'cache invalidation listener lost; caches are bypassed until it reconnects',
        'cache invalidation listener reconnected',
      ]);
      // Listening again: a NOTIFY after the reconnect drops what was cached since.
      await cache.through('k', ['ws:1'], async () => 2);
      expect(cache.get('k')).toBe(2);
      const other = new pg.Client({ connectionString: url });
      await other.connect();
      await other.query(`SELECT pg_notify('wds_invalidate', 'ws:1')`);
      await other.end();
      await waitFor(() => cache.get('k') === undefined);
    } finally {
      await own.stop();
      await dropDatabase(url);
    }
  });
});

describe('TopicCache topics and bounds', () => {
  it('drops an entry by any of its topics, and only the entries of that topic', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache<string>(bus, { ttlMs: 60_000 });
    await cache.through('both', ['ws:1', 'user:1'], async () => 'both');
    await cache.through('ws', ['ws:1'], async () => 'ws');
    await cache.through('other', ['ws:2'], async () => 'other');
    await cache.through('topics of the value', (v) => [`user:${v}`], async () => '2');
    bus.invalidate('user:1');
    expect([cache.get('both'), cache.get('ws'), cache.get('other'), cache.get('topics of the value')]).toEqual([undefined, 'ws', 'other', '2']);
    bus.invalidate('ws:1');
    expect([cache.get('ws'), cache.get('other')]).toEqual([undefined, 'other']);
    bus.invalidate('user:2');
    expect(cache.get('topics of the value')).toBeUndefined();
    bus.invalidate('*');
    expect(cache.size).toBe(0);
  });

  it('holds at most maxEntries, dropping the least recently used', async () => {
    const cache = new TopicCache<number>(new ManualBus(), { ttlMs: 60_000, maxEntries: 2 });
    await cache.through('a', [], async () => 1);
    await cache.through('b', [], async () => 2);
    expect(cache.get('a')).toBe(1); // a hit: a is now the most recent
    await cache.through('c', [], async () => 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c'), cache.size]).toEqual([1, undefined, 3, 2]);
  });

  it('keys a workspace value within its workspace and drops it with the workspace topic', async () => {
    const bus = new ManualBus();
    const cache = new TopicCache(bus, { ttlMs: 60_000 });
    expect(await cache.throughWorkspace('a', 'k', async () => 'a1')).toBe('a1');
    expect(await cache.throughWorkspace('b', 'k', async () => 'b1')).toBe('b1');
    expect(await cache.throughWorkspace('a', 'k', async () => 'a2')).toBe('a1');
    bus.invalidate(workspaceTopic('a'));
    expect(await cache.throughWorkspace('a', 'k', async () => 'a3')).toBe('a3');
    expect(await cache.throughWorkspace('b', 'k', async () => 'b2')).toBe('b1');
  });
});
