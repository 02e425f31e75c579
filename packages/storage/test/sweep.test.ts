import '@wds/testkit';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createDb, type Db, migrateToLatest, newId, sql, asUuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BLOB_DELETION_LOCK, type BlobStore, createFsBlobStore, createS3BlobStore, insertFile, type S3BlobStore, softDeleteFile, sweepOrphanBlobs } from '../src/index.js';
import { MiB } from './blob-store-suite.js';
import { filesUnder, generated, startS3, type TestS3, tempDir } from './support.js';

const HOUR = 3600_000;
const longAgo = () => new Date(Date.now() - 2 * HOUR);

let db: Db;
let dbUrl: string;
const WS = newId();

beforeAll(async () => {
  dbUrl = await createDatabase(inject('pgServerUrl'), { prefix: 'storage' });
  db = createDb(dbUrl, { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: WS, name: 'sweeps' }).execute();
});
afterAll(() => db.destroy());

const put = async (store: BlobStore, text = randomBytes(8).toString('hex')) => (await store.put(Readable.from([Buffer.from(text)]))).key;

async function record(key: string): Promise<string> {
  const id = newId();
  await insertFile(db, { id, workspaceId: WS, filename: 'f.txt', contentType: 'text/plain', size: 1, sha256: 'ab'.repeat(32), blobKey: key, metadata: {}, createdBy: null });
  return id;
}

/**
 * The orphan sweep over one store: `backdate` makes a blob look written two hours ago (the grace period is one hour).
 */
function orphanSuite(ctx: () => { store: BlobStore; backdate: (key: string) => Promise<void> }) {
  it('removes an old blob without a record; keeps referenced (also soft-deleted) blobs and fresh orphans', async () => {
    const { store, backdate } = ctx();
    const orphan = await put(store);
    const referenced = await put(store);
    const deletedFile = await put(store);
    const freshOrphan = await put(store);
    await record(referenced);
    await softDeleteFile(db, WS, asUuid(await record(deletedFile)));
    for (const key of [orphan, referenced, deletedFile]) await backdate(key);

    const listed = new Map<string, Date>();
    for await (const b of store.list()) listed.set(b.key, b.modifiedAt);
    for (const key of [orphan, referenced, deletedFile, freshOrphan]) expect(listed.has(key), key).toBe(true);
    expect(Date.now() - listed.get(orphan)!.getTime()).toBeGreaterThan(HOUR);

    expect(await sweepOrphanBlobs({ db, blobs: store, graceMs: HOUR })).toBe(1);
    expect(await store.has(orphan)).toBe(false);
    for (const key of [referenced, deletedFile, freshOrphan]) expect(await store.has(key), key).toBe(true);
    // Nothing more to do the second time.
    expect(await sweepOrphanBlobs({ db, blobs: store, graceMs: HOUR })).toBe(0);
  });

  it('removes nothing while a backup holds the blob deletion lock, and the orphan on the next sweep', async () => {
    const { store, backdate } = ctx();
    const orphan = await put(store);
    await backdate(orphan);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    // What a backup does for its whole run: the lock, shared, on a session of its own.
    const backup = db.connection().execute(async (conn) => {
      await sql`SELECT pg_advisory_lock_shared(${BLOB_DELETION_LOCK})`.execute(conn);
      locked();
      await held;
      await sql`SELECT pg_advisory_unlock_shared(${BLOB_DELETION_LOCK})`.execute(conn);
    });
    await isLocked;
    expect(await sweepOrphanBlobs({ db, blobs: store, graceMs: HOUR })).toBe(0);
    expect(await store.has(orphan)).toBe(true);
    release();
    await backup;
    expect(await sweepOrphanBlobs({ db, blobs: store, graceMs: HOUR })).toBe(1);
    expect(await store.has(orphan)).toBe(false);
  });

  it('works on a pool of one connection (the lock and the lookup share it)', async () => {
    const { store, backdate } = ctx();
    const orphan = await put(store);
    await backdate(orphan);
    const one = createDb(dbUrl, { max: 1 }).db;
    try {
      expect(await sweepOrphanBlobs({ db: one, blobs: store, graceMs: HOUR })).toBe(1);
    } finally {
      await one.destroy();
    }
    expect(await store.has(orphan)).toBe(false);
  });

  it('stops between batches once its signal aborts', async () => {
    const { store, backdate } = ctx();
    const orphan = await put(store);
    await backdate(orphan);
    const stopped = new AbortController();
    stopped.abort();
    expect(await sweepOrphanBlobs({ db, blobs: store, graceMs: HOUR, signal: stopped.signal })).toBe(0);
    expect(await store.has(orphan)).toBe(true);
    await store.delete(orphan);
  });
}

describe('filesystem store', () => {
  let dir: string;
  let store: ReturnType<typeof createFsBlobStore>;
  beforeAll(async () => {
    dir = await tempDir('sweep');
    store = createFsBlobStore(dir, { cleanTempOnStart: false });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  orphanSuite(() => ({
    store,
    backdate: async (key) => {
      const t = longAgo();
      await utimes(join(dir, key.slice(0, 2), key), t, t);
    },
  }));

  it('lists only its own complete blobs: not temp files, nor anything else in its directory', async () => {
    const own = await put(store);
    await mkdir(join(dir, 'tmp'), { recursive: true });
    await writeFile(join(dir, 'tmp', `${'e'.repeat(32)}.tmp`), 'partial');
    await writeFile(join(dir, 'README'), 'not a blob');
    await mkdir(join(dir, 'ab'), { recursive: true });
    await writeFile(join(dir, 'ab', 'notes.txt'), 'not a blob');
    await writeFile(join(dir, 'ab', `cd${'0'.repeat(30)}`), 'a key in the wrong shard');
    const keys: string[] = [];
    for await (const b of store.list()) keys.push(b.key);
    expect(keys).toContain(own);
    expect(keys.every((k) => /^[0-9a-f]{32}$/.test(k))).toBe(true);
    expect(keys).not.toContain(`cd${'0'.repeat(30)}`);
  });

  it('cleanTemp removes temp uploads not written to for longer than asked, and keeps a fresh one', async () => {
    const tmp = join(dir, 'tmp');
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    const stale = `${'a'.repeat(32)}.tmp`;
    const fresh = `${'b'.repeat(32)}.tmp`;
    await writeFile(join(tmp, stale), 'crashed mid-upload');
    await writeFile(join(tmp, fresh), 'still streaming');
    const t = new Date(Date.now() - 20 * 60_000);
    await utimes(join(tmp, stale), t, t);
    expect(await store.cleanTemp(10 * 60_000)).toBe(1);
    expect(await filesUnder(tmp)).toEqual([fresh]);
  });
});

describe('S3 store (s3rver)', () => {
  let s3: TestS3;
  let store: S3BlobStore;
  const bucket = `wds-sweep-${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    s3 = await startS3();
    store = createS3BlobStore({
      bucket,
      endpoint: s3.endpoint,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
      prefix: 'blobs/',
      partSizeBytes: 5 * MiB,
    });
    await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    store?.destroy();
    await s3?.close();
  });

  orphanSuite(() => ({ store, backdate: (key) => s3.backdate(bucket, { key }, longAgo()) }));

  it('lists only keys it could have made under its prefix', async () => {
    const own = await put(store);
    for (const Key of ['blobs/readme.txt', `other/${'f'.repeat(32)}`, 'f'.repeat(32)]) {
      await store.client.send(new PutObjectCommand({ Bucket: bucket, Key, Body: 'foreign' }));
      await s3.backdate(bucket, { key: Key }, longAgo());
    }
    const keys: string[] = [];
    for await (const b of store.list()) keys.push(b.key);
    expect(keys).toContain(own);
    expect(keys.every((k) => /^blobs\/[0-9a-f]{32}$/.test(k))).toBe(true);
    // and so the orphan sweep never touches them
    await sweepOrphanBlobs({ db, blobs: store, graceMs: HOUR });
    for (const Key of ['blobs/readme.txt', `other/${'f'.repeat(32)}`, 'f'.repeat(32)]) expect(await store.has(Key), Key).toBe(true);
  });

  it('cleanTemp aborts an unfinished multipart upload started longer ago than asked, and keeps one in progress', async () => {
    const controller = new AbortController();
    let reached!: () => void;
    const stalled = new Promise<void>((resolve) => (reached = resolve));
    const pending = store.put(
      (async function* () {
        yield* generated(12 * MiB);
        reached();
        await new Promise(() => undefined);
      })(),
      { signal: controller.signal },
    );
    pending.catch(() => undefined);
    await stalled;
    await expect.poll(() => s3.uploadsLeft(bucket)).toHaveLength(1);
    const [uploadId] = await s3.uploadsLeft(bucket);

    // In progress (started just now): kept.
    expect(await store.cleanTemp(10 * 60_000)).toBe(0);
    expect(await s3.uploadsLeft(bucket)).toEqual([uploadId]);

    // Left by a crash 20 minutes ago: aborted, its parts gone.
    await s3.backdate(bucket, { uploadId: uploadId! }, new Date(Date.now() - 20 * 60_000));
    expect(await store.cleanTemp(10 * 60_000)).toBe(1);
    expect(await s3.uploadsLeft(bucket)).toEqual([]);

    controller.abort();
    await expect(pending).rejects.toBeDefined();
  });
});
