/**
 * The filesystem blob store (the default, under DATA_DIR/blobs). Layout: `<dir>/<first 2 hex of key>/<key>` for
 * blobs, `<dir>/tmp/<key>.tmp` while one is being written. A put streams into the temp file (one awaited write per
 * chunk, so memory stays bounded whatever the size), fsyncs it, renames it into place and fsyncs the directory:
 * a blob is visible under its key only once complete and durable. Any failure closes and unlinks the temp file.
 *
 * Temp files left by a crash: `cleanTemp(ms)` removes those not modified for `ms` (default an hour); the store runs
 * it once in the background when created (turn off with `cleanTempOnStart: false`), and the service's maintenance
 * on a schedule. An upload in progress keeps its temp file's mtime fresh with every chunk, so only one stalled for
 * longer than that could be swept from under it (its put then fails cleanly at the rename).
 */
import { type FileHandle, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type BlobStore, blobNotFound, blobUnreadable, checkRange, newBlobKey, type StoredBlob } from './blob-store.js';
import { abortReason, pumpHashed } from './hashing.js';

const KEY = /^[0-9a-f]{32}$/;
const SHARD = /^[0-9a-f]{2}$/;
const TEMP_MAX_AGE_MS = 60 * 60 * 1000;

export interface FsBlobStoreOptions {
  /** Sweep stale temp files once in the background when the store is created (default true). */
  cleanTempOnStart?: boolean;
}

export interface FsBlobStore extends BlobStore {
  readonly dir: string;
  /** Removes temp files not modified for `olderThanMs` (default one hour); returns how many. */
  cleanTemp(olderThanMs?: number): Promise<number>;
}

/** The names in a directory; none when it does not exist (yet). */
async function namesIn(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

export function createFsBlobStore(dir: string, opts: FsBlobStoreOptions = {}): FsBlobStore {
  const tmpDir = join(dir, 'tmp');

  /** The blob's path; undefined for anything that is not one of our keys (nothing else is ever a path here). */
  const pathOf = (key: string): string | undefined => (KEY.test(key) ? join(dir, key.slice(0, 2), key) : undefined);

  const store: FsBlobStore = {
    dir,

    async put(source, putOpts = {}) {
      if (putOpts.signal?.aborted) throw abortReason(putOpts.signal);
      const key = newBlobKey();
      const finalPath = join(dir, key.slice(0, 2), key);
      await mkdir(tmpDir, { recursive: true, mode: 0o700 });
      const tmpPath = join(tmpDir, `${key}.tmp`);
      const file = await open(tmpPath, 'wx', 0o600);
      let closed = false;
      let renamed = false;
      const flusher = backgroundFlusher(file);
      try {
        const counted = await pumpHashed(source, putOpts, async (chunk) => {
          await writeAll(file, chunk);
          flusher.wrote(chunk.byteLength);
        });
        await flusher.settled();
        await file.sync();
        closed = true;
        await file.close();
        const created = await mkdir(join(dir, key.slice(0, 2)), { recursive: true, mode: 0o700 });
        if (putOpts.signal?.aborted) throw abortReason(putOpts.signal);
        await rename(tmpPath, finalPath);
        renamed = true;
        await fsyncDir(join(dir, key.slice(0, 2)));
        if (created) await fsyncDir(dir);
        if (putOpts.signal?.aborted) throw abortReason(putOpts.signal);
        return { key, ...counted };
      } catch (err) {
        await flusher.settled();
        if (!closed) await file.close().catch(() => undefined);
        await rm(renamed ? finalPath : tmpPath, { force: true }).catch(() => undefined);
        throw err;
      }
    },

    async get(key, range) {
      checkRange(range);
      const path = pathOf(key);
      if (!path) throw blobNotFound(key);
      // Opened first so that a missing blob rejects here rather than erroring the stream later. Node's fs errors
      // name the path: what reaches a member (a job's error, a file's status) is the store's own message instead.
      const file = await open(path, 'r').catch((err: { code?: string }) => {
        throw err?.code === 'ENOENT' ? blobNotFound(key) : blobUnreadable(key, err);
      });
      return range ? file.createReadStream({ start: range.start, end: range.end }) : file.createReadStream();
    },

    async delete(key) {
      const path = pathOf(key);
      if (path) await rm(path, { force: true });
    },

    async has(key) {
      const path = pathOf(key);
      if (!path) return false;
      try {
        return (await stat(path)).isFile();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
    },

    async *list(): AsyncGenerator<StoredBlob> {
      for (const shard of await namesIn(dir)) {
        if (!SHARD.test(shard)) continue; // tmp/ and anything that is not ours
        for (const key of await namesIn(join(dir, shard))) {
          if (!KEY.test(key) || !key.startsWith(shard)) continue;
          const st = await stat(join(dir, shard, key)).catch(() => undefined); // removed meanwhile
          if (st?.isFile()) yield { key, size: st.size, modifiedAt: st.mtime };
        }
      }
    },

    async cleanTemp(olderThanMs = TEMP_MAX_AGE_MS) {
      const names = await namesIn(tmpDir);
      const cutoff = Date.now() - olderThanMs;
      let removed = 0;
      for (const name of names) {
        const path = join(tmpDir, name);
        const st = await stat(path).catch(() => undefined);
        if (st?.isFile() && st.mtimeMs < cutoff) {
          await rm(path, { force: true });
          removed++;
        }
      }
      return removed;
    },
  };

  if (opts.cleanTempOnStart !== false) store.cleanTemp().catch(() => undefined);
  return store;
}

/** Bytes written between background flushes. */
const FLUSH_EVERY_BYTES = 32 * 1024 * 1024;

/**
 * Starts an fdatasync in the background every FLUSH_EVERY_BYTES while a blob streams in, one at a time, so the disk
 * writes the data while the network still delivers it and the final fsync has only the last stretch left (rather
 * than the whole file, which would add its full write-out time to every large upload).
 */
function backgroundFlusher(file: FileHandle): { wrote(bytes: number): void; settled(): Promise<void> } {
  let unflushed = 0;
  let running: Promise<void> | undefined;
  return {
    wrote(bytes) {
      unflushed += bytes;
      if (unflushed < FLUSH_EVERY_BYTES || running) return;
      unflushed = 0;
      running = file.datasync().then(
        () => {
          running = undefined;
        },
        () => {
          running = undefined; // the final fsync reports any real failure
        },
      );
    },
    settled: () => running ?? Promise.resolve(),
  };
}

/** Writes the whole chunk (a write may take only part of it). */
async function writeAll(file: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await file.write(chunk, offset, chunk.byteLength - offset);
    offset += bytesWritten;
  }
}

/** Makes a rename or create inside `path` durable. */
async function fsyncDir(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
