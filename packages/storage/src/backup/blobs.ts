/**
 * The blob side of a backup. A backup holds each referenced blob once per content, under `blobs/<aa>/<sha256>`,
 * checked against the SHA-256 and size its file record names while it is copied out; a restore writes them into
 * the target store through the store's own `put` (new keys: keys are the store's business) and hands back the
 * mapping old key → new key for the file records.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../blob-store.js';

export interface BlobRef {
  key: string;
  /** Hex. */
  sha256: string;
  size: number;
}

/** Where a blob of this content lives inside a backup directory. */
export const blobPath = (dir: string, sha256: string): string => join(dir, 'blobs', sha256.slice(0, 2), sha256);

const SHA256 = /^[0-9a-f]{64}$/;

/** Runs `work` over `items`, `width` at a time; the first failure rejects (the others still finish). */
async function inParallel<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await work(items[next++] as T);
  });
  await Promise.all(lanes);
}

/**
 * Copies every referenced blob out of `store` into the backup directory. A blob missing from the store is reported
 * (`missing`) and the rest is copied: one lost file must not stop every backup after it. One whose bytes differ
 * from its record fails the backup: those bytes are damaged, and a backup must not pass them on as the file.
 */
export async function copyBlobsOut(store: BlobStore, refs: BlobRef[], dir: string): Promise<{ bytes: number; missing: BlobRef[] }> {
  const byContent = new Map<string, BlobRef>();
  for (const ref of refs) {
    if (!SHA256.test(ref.sha256)) throw new Error(`blob ${ref.key}: its record has no valid sha256 (${ref.sha256})`);
    byContent.set(ref.sha256, ref);
  }
  let bytes = 0;
  const missing: BlobRef[] = [];
  await inParallel([...byContent.values()], 4, async (ref) => {
    const dest = blobPath(dir, ref.sha256);
    const source = await store.get(ref.key).catch((err: { code?: string }) => {
      if (err.code === 'ENOENT') return undefined; // both stores say so (blobNotFound)
      throw err;
    });
    if (!source) {
      missing.push(ref);
      return;
    }
    await mkdir(join(dest, '..'), { recursive: true, mode: 0o700 });
    const tmp = `${dest}.tmp`;
    const hash = createHash('sha256');
    let size = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, measure, createWriteStream(tmp, { mode: 0o600 }));
      const sha256 = hash.digest('hex');
      if (sha256 !== ref.sha256 || size !== ref.size) {
        throw new Error(`blob ${ref.key} does not match its record (sha256 ${sha256}, ${size} bytes; recorded ${ref.sha256}, ${ref.size} bytes)`);
      }
      await rename(tmp, dest);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    bytes += size;
  });
  missing.sort((a, b) => a.key.localeCompare(b.key));
  return { bytes, missing };
}

/** Checks that the backup has every blob at its recorded size (before anything is restored). */
export async function checkBlobsPresent(refs: BlobRef[], dir: string): Promise<void> {
  for (const ref of refs) {
    const st = await stat(blobPath(dir, ref.sha256)).catch(() => undefined);
    if (!st?.isFile() || st.size !== ref.size) throw new Error(`the backup lacks the blob ${ref.sha256} (${ref.size} bytes) of ${ref.key}, or it has another size`);
  }
}

/** Writes each referenced blob into `store`; returns old key → new key. Bytes that differ from the manifest fail. */
export async function restoreBlobs(store: BlobStore, refs: BlobRef[], dir: string): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  await inParallel(refs, 4, async (ref) => {
    const put = await store.put(createReadStream(blobPath(dir, ref.sha256)));
    if (put.sha256 !== ref.sha256 || put.size !== ref.size) {
      await store.delete(put.key).catch(() => undefined);
      throw new Error(`the backup's blob ${ref.sha256} is damaged (read sha256 ${put.sha256}, ${put.size} bytes)`);
    }
    keys.set(ref.key, put.key);
  });
  return keys;
}
