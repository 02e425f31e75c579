import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFsBlobStore, type FsBlobStore } from '../src/index.js';
import { blobStoreSuite, MiB } from './blob-store-suite.js';
import { filesUnder, generated, hashStream, sha256, tempDir } from './support.js';

let dir: string;
let store: FsBlobStore;

beforeAll(async () => {
  dir = await tempDir('fs');
  store = createFsBlobStore(dir);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('filesystem blob store', () => {
  // First in the file, so that no earlier test has already grown the process.
  it('a 64 MiB put keeps memory bounded (rss grows by well under the size)', async () => {
    const size = 64 * MiB;
    // V8 lets up to 64 MiB of dropped Buffers wait for a collection, as much as the whole stream: collect every
    // 4 MiB so that rss shows what is held. Garbage goes; chunks a store kept would stay.
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc, 'vitest.config.ts runs the tests with --expose-gc').toBeTypeOf('function');
    const rssGrowth = async (run: (sample: () => void) => Promise<unknown>) => {
      gc!();
      const base = process.memoryUsage().rss;
      let peak = base;
      let chunks = 0;
      const sample = () => {
        if (++chunks % 64 === 0) gc!();
        peak = Math.max(peak, process.memoryUsage().rss);
      };
      const timer = setInterval(sample, 5);
      try {
        await run(sample);
      } finally {
        clearInterval(timer);
      }
      return peak - base;
    };

    // The hashing thread starts with the first put and stays (a fixed cost of the process, about 9 MiB): start it
    // first, so what is measured is what a put holds.
    await store.delete((await store.put(Readable.from([Buffer.from('warm up')]))).key);
    let result!: { key: string; sha256: string };
    const growth = await rssGrowth(async (sample) => {
      result = await store.put(generated(size, 64 * 1024, sample));
    });
    console.log(`rss growth during a 64 MiB put: ${(growth / MiB).toFixed(1)} MiB`);
    expect(growth).toBeLessThan(24 * MiB);
    expect(await hashStream(await store.get(result.key))).toEqual({ size, sha256: result.sha256 });
    await store.delete(result.key);

    // With an abort signal (how the HTTP routes call it) too: nothing may hold the chunks a signal saw.
    const signal = new AbortController().signal;
    const withSignal = await rssGrowth(async (sample) => {
      result = await store.put(generated(size, 64 * 1024, sample), { signal });
    });
    console.log(`rss growth during a 64 MiB put with a signal: ${(withSignal / MiB).toFixed(1)} MiB`);
    expect(withSignal).toBeLessThan(24 * MiB);
    await store.delete(result.key);

    // The probe itself: holding the same stream in memory does show up.
    const held: Buffer[] = [];
    const heldGrowth = await rssGrowth(async (sample) => {
      for await (const c of generated(size, 64 * 1024, sample)) held.push(Buffer.from(c));
    });
    console.log(`rss growth while holding 64 MiB: ${(heldGrowth / MiB).toFixed(1)} MiB`);
    expect(heldGrowth).toBeGreaterThan(32 * MiB);
    held.length = 0;
  });


  blobStoreSuite(() => ({ store, snapshot: async () => (await filesUnder(dir)).sort() }));

  it('puts running at once each get their own hash (they share the hashing thread)', async () => {
    const datas = [3, 1, 5, 2].map((mib, i) => Buffer.concat([randomBytes(mib * MiB), Buffer.from([i])]));
    const chunked = (data: Buffer) => Readable.from(Array.from({ length: Math.ceil(data.length / 65536) }, (_, i) => data.subarray(i * 65536, (i + 1) * 65536)));
    const results = await Promise.all(datas.map((d) => store.put(chunked(d))));
    expect(results.map((r) => r.sha256)).toEqual(datas.map(sha256));
    for (const r of results) await store.delete(r.key);
  });

  it('lays blobs out as <dir>/<first 2 hex>/<key> with nothing left in tmp', async () => {
    const data = randomBytes(1000);
    const { key } = await store.put(Readable.from([data]));
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect((await stat(join(dir, key.slice(0, 2), key))).size).toBe(1000);
    expect(await filesUnder(join(dir, 'tmp'))).toEqual([]);
  });

  it('keys that are not its own never become paths', async () => {
    await writeFile(join(dir, 'outside'), 'secret');
    for (const key of ['../outside', 'outside', '..', '', `${'a'.repeat(31)}/`, 'A'.repeat(32)]) {
      await expect(store.get(key)).rejects.toMatchObject({ code: 'ENOENT' });
      expect(await store.has(key)).toBe(false);
      await store.delete(key);
    }
    expect(await filesUnder(dir)).toContain('outside');
    await rm(join(dir, 'outside'));
  });

  it('a disk error rejects (and the source is stopped)', async () => {
    const file = join(dir, 'not-a-dir');
    await writeFile(file, '');
    const broken = createFsBlobStore(join(file, 'blobs'), { cleanTempOnStart: false });
    const source = Readable.from(generated(MiB));
    await expect(broken.put(source)).rejects.toMatchObject({ code: 'ENOTDIR' });
    await rm(file);
  });

  it('cleanTemp removes temp files older than an hour, keeps fresh ones', async () => {
    const tmp = join(dir, 'tmp');
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, 'old.tmp'), 'x');
    await writeFile(join(tmp, 'fresh.tmp'), 'x');
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(join(tmp, 'old.tmp'), twoHoursAgo, twoHoursAgo);
    expect(await store.cleanTemp()).toBe(1);
    expect(await filesUnder(tmp)).toEqual(['fresh.tmp']);
    await rm(join(tmp, 'fresh.tmp'));

    // and once in the background when a store is created
    await writeFile(join(tmp, 'old.tmp'), 'x');
    await utimes(join(tmp, 'old.tmp'), twoHoursAgo, twoHoursAgo);
    createFsBlobStore(dir);
    await expect.poll(() => filesUnder(tmp)).toEqual([]);
  });
});
