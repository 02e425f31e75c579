import { createDatabase, dropDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { InvalidationBus, TopicCache } from '../src/index.js';

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
    const cache = new TopicCache<number>(bus, 60_000);
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
    const cache = new TopicCache<string>(bus, 60_000);
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
      const short = new TopicCache<number>(bus, 30);
      await short.through('k', [], async () => 1);
      vi.setSystemTime(Date.now() + 29);
      expect(short.get('k')).toBe(1);
      vi.setSystemTime(Date.now() + 11);
      expect(short.get('k')).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
    const off = new TopicCache<number>(bus, 0);
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
      const cache = new TopicCache<number>(own, 60_000);
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
