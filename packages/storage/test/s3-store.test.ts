import { CreateBucketCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3BlobStore, type S3BlobStore } from '../src/index.js';
import { blobStoreSuite, MiB } from './blob-store-suite.js';
import { generated, readAll, startS3, type TestS3 } from './support.js';

let s3: TestS3;
let store: S3BlobStore;
const bucket = `wds-test-${randomBytes(4).toString('hex')}`;
const options = () => ({
  bucket,
  endpoint: s3.endpoint,
  region: 'us-east-1',
  accessKeyId: 'S3RVER',
  secretAccessKey: 'S3RVER',
  forcePathStyle: true,
  prefix: 'blobs/',
  partSizeBytes: 5 * MiB,
});

async function objects(): Promise<string[]> {
  const res = await store.client.send(new ListObjectsV2Command({ Bucket: bucket }));
  return (res.Contents ?? []).map((o) => o.Key ?? '').sort();
}

beforeAll(async () => {
  s3 = await startS3();
  store = createS3BlobStore(options());
  await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  store?.destroy();
  await s3?.close();
});

describe('S3 blob store (s3rver)', () => {
  blobStoreSuite(() => ({
    store,
    snapshot: async () => [...(await objects()), ...(await s3.uploadsLeft(bucket)).map((u) => `upload:${u}`)],
  }));

  it('keys are <prefix><random>', async () => {
    const { key } = await store.put(Readable.from([Buffer.from('x')]));
    expect(key).toMatch(/^blobs\/[0-9a-f]{32}$/);
    expect(await objects()).toContain(key);
    await store.delete(key);
  });

  it('the test server really keeps unfinished multipart uploads until they are aborted', async () => {
    // Guards the checks above: a stalled multi-part put has an upload on s3rver's disk while it runs.
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
    await stalled;
    await expect.poll(() => s3.uploadsLeft(bucket)).toHaveLength(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(await s3.uploadsLeft(bucket)).toEqual([]);
  });

  it('an S3 error rejects the put without hanging and stops the source', async () => {
    const missing = createS3BlobStore({ ...options(), bucket: 'no-such-bucket' });
    const source = Readable.from(generated(12 * MiB));
    await expect(missing.put(source)).rejects.toMatchObject({ name: 'NoSuchBucket' });
    expect(source.destroyed).toBe(true);
    const small = Readable.from([Buffer.from('x')]);
    await expect(missing.put(small)).rejects.toMatchObject({ name: 'NoSuchBucket' });
    missing.destroy();
  });

  it('get streams what was put', async () => {
    const data = randomBytes(3000);
    const { key } = await store.put(Readable.from([data]));
    expect(await readAll(await store.get(key))).toEqual(data);
  });
});
