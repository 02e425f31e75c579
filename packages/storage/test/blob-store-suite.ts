import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type BlobStore, BlobTooLargeError } from '../src/index.js';
import { failingAfter, generated, hashStream, readAll, sha256, stallingAfter } from './support.js';

export const MiB = 1024 * 1024;

export interface SuiteContext {
  store: BlobStore;
  /** Everything the store holds, in progress or not (files, objects, unfinished multipart uploads). */
  snapshot(): Promise<string[]>;
}

/** The behaviour every BlobStore must have; `big` is large enough to span several S3 parts. */
export function blobStoreSuite(ctx: () => SuiteContext, big = 12 * MiB): void {
  const put = (source: AsyncIterable<Uint8Array>, opts?: Parameters<BlobStore['put']>[1]) => ctx().store.put(source, opts);

  describe('round trips', () => {
    it('stores the bytes under a new random key with their size and SHA-256', async () => {
      const data = randomBytes(big + 12345);
      const source = Readable.from([data.subarray(0, 1000), data.subarray(1000, 5 * MiB + 7), data.subarray(5 * MiB + 7)]);
      const result = await put(source);
      expect(result).toEqual({ key: expect.stringMatching(/[0-9a-f]{32}$/), size: data.length, sha256: sha256(data) });
      expect(await ctx().store.has(result.key)).toBe(true);
      expect(sha256(await readAll(await ctx().store.get(result.key)))).toBe(sha256(data));
    });

    it('an empty blob', async () => {
      const result = await put(Readable.from([]));
      expect(result.size).toBe(0);
      expect(result.sha256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
      expect((await readAll(await ctx().store.get(result.key))).length).toBe(0);
    });

    it('answers inclusive byte ranges, also across part boundaries', async () => {
      const data = randomBytes(big);
      const { key } = await put(Readable.from([data]));
      const range = async (start: number, end: number) => readAll(await ctx().store.get(key, { start, end }));
      // Compared as hex: a failing toEqual on a multi-MiB Buffer would spend minutes (and GiBs) on the diff.
      const hex = (b: Buffer) => (b.length > 64 ? `${b.length} bytes, sha256 ${sha256(b)}` : b.toString('hex'));
      expect(hex(await range(0, 0))).toBe(hex(data.subarray(0, 1)));
      expect(hex(await range(10, 19))).toBe(hex(data.subarray(10, 20)));
      expect(hex(await range(data.length - 1, data.length - 1))).toBe(hex(data.subarray(data.length - 1)));
      expect(hex(await range(data.length - 2, data.length + 100))).toBe(hex(data.subarray(data.length - 2)));
      expect(sha256(await range(5 * MiB - 100, 5 * MiB + 100))).toBe(sha256(data.subarray(5 * MiB - 100, 5 * MiB + 101)));
      expect(sha256(await range(0, data.length - 1))).toBe(sha256(data));
      await expect(ctx().store.get(key, { start: 5, end: 4 })).rejects.toThrow(RangeError);
      await expect(ctx().store.get(key, { start: -1, end: 4 })).rejects.toThrow(RangeError);
    });

    it('concurrent puts get distinct keys and keep their own bytes', async () => {
      const blobs = Array.from({ length: 16 }, () => randomBytes(64 * 1024 + Math.floor(Math.random() * 4096)));
      const results = await Promise.all(blobs.map((b) => put(Readable.from([b.subarray(0, 1000), b.subarray(1000)]))));
      expect(new Set(results.map((r) => r.key)).size).toBe(blobs.length);
      for (const [i, r] of results.entries()) {
        expect(r.sha256).toBe(sha256(blobs[i]!));
        expect(sha256(await readAll(await ctx().store.get(r.key)))).toBe(sha256(blobs[i]!));
      }
    });
  });

  describe('get, has, delete', () => {
    it('a missing blob: get rejects ENOENT, has is false, delete is fine', async () => {
      const { key } = await put(Readable.from([Buffer.from('hello')]));
      await ctx().store.delete(key);
      expect(await ctx().store.has(key)).toBe(false);
      await expect(ctx().store.get(key)).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(ctx().store.get(key, { start: 0, end: 1 })).rejects.toMatchObject({ code: 'ENOENT' });
      await ctx().store.delete(key);
    });
  });

  describe('nothing of a failed put remains', () => {
    it('too large: BlobTooLargeError as soon as the limit is crossed, the source destroyed', async () => {
      const before = await ctx().snapshot();
      let pulled = 0;
      const source = Readable.from(generated(3 * big, 64 * 1024, (c) => (pulled += c.length)));
      const err = await put(source, { maxBytes: big - 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BlobTooLargeError);
      expect((err as BlobTooLargeError).limit).toBe(big - 1);
      expect(source.destroyed).toBe(true);
      expect(pulled).toBeLessThan(big + 2 * MiB); // stopped reading at the limit (plus what the stream had buffered)
      expect(await ctx().snapshot()).toEqual(before);
    });

    it('too large by one byte on a small blob; exactly the limit is fine', async () => {
      const before = await ctx().snapshot();
      await expect(put(Readable.from([randomBytes(101)]), { maxBytes: 100 })).rejects.toBeInstanceOf(BlobTooLargeError);
      expect(await ctx().snapshot()).toEqual(before);
      const ok = await put(Readable.from([randomBytes(100)]), { maxBytes: 100 });
      expect(ok.size).toBe(100);
      await ctx().store.delete(ok.key);
    });

    it('a source that errors midway', async () => {
      const before = await ctx().snapshot();
      await expect(put(failingAfter(big))).rejects.toThrow('source broke');
      await expect(put(failingAfter(1000))).rejects.toThrow('source broke');
      expect(await ctx().snapshot()).toEqual(before);
    });

    it('abort via the signal while the source is stalled, and an already aborted signal', async () => {
      const before = await ctx().snapshot();
      const controller = new AbortController();
      let reached!: () => void;
      const stalled = new Promise<void>((resolve) => (reached = resolve));
      const pending = put(stallingAfter(big, reached), { signal: controller.signal });
      await stalled;
      // Something of the put is in the store (a temp file, an unfinished multipart upload) that the abort must remove.
      await expect.poll(() => ctx().snapshot()).not.toEqual(before);
      controller.abort();
      // The source never resumes: only the abort can end the put.
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      expect(await ctx().snapshot()).toEqual(before);

      await expect(put(Readable.from([Buffer.from('x')]), { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
      expect(await ctx().snapshot()).toEqual(before);
    });

    it('abort while the data is still flowing', async () => {
      const before = await ctx().snapshot();
      const controller = new AbortController();
      let pulled = 0;
      const source = generated(4 * big, 64 * 1024, (c) => {
        pulled += c.length;
        if (pulled >= big) controller.abort();
      });
      await expect(put(source, { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
      expect(await ctx().snapshot()).toEqual(before);
    });
  });

  it('a generated 64 MiB stream round trips by hash', async () => {
    const size = 64 * MiB;
    const t0 = performance.now();
    const result = await put(generated(size));
    const seconds = (performance.now() - t0) / 1000;
    console.log(`64 MiB put: ${seconds.toFixed(2)} s, ${(64 / seconds).toFixed(0)} MiB/s`);
    expect(result.size).toBe(size);
    expect(await hashStream(await ctx().store.get(result.key))).toEqual({ size, sha256: result.sha256 });
    await ctx().store.delete(result.key);
  });
}
