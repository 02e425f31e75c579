import { createHash, randomFillSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import S3rver from 's3rver';

/** All files under `dir`, recursively, relative to it. */
export async function filesUnder(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name).slice(dir.length + 1));
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `wds-storage-${prefix}-`));
}

export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** Hashes and counts a stream without keeping it. */
export async function hashStream(stream: NodeJS.ReadableStream): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const c of stream as AsyncIterable<Buffer>) {
    hash.update(c);
    size += c.length;
  }
  return { size, sha256: hash.digest('hex') };
}

/**
 * `total` pseudo-random bytes in fresh `chunkSize` chunks, generated as they are pulled (never held whole);
 * `onChunk` sees each (to hash it on the side, sample memory).
 */
export async function* generated(total: number, chunkSize = 64 * 1024, onChunk?: (c: Buffer) => void): AsyncGenerator<Uint8Array> {
  let left = total;
  while (left > 0) {
    const chunk = randomFillSync(Buffer.allocUnsafe(Math.min(chunkSize, left)));
    left -= chunk.length;
    onChunk?.(chunk);
    yield chunk;
  }
}

/** Yields `before` bytes, then throws. */
export async function* failingAfter(before: number): AsyncGenerator<Uint8Array> {
  yield* generated(before);
  throw new Error('source broke');
}

/** Yields `before` bytes, then waits for good (until the consumer stops it). */
export async function* stallingAfter(before: number, reached?: () => void): AsyncGenerator<Uint8Array> {
  yield* generated(before);
  reached?.();
  await new Promise(() => undefined);
}

export interface TestS3 {
  endpoint: string;
  /** s3rver's data directory: `<dir>/<bucket>/._S3rver_uploads/<uploadId>` holds an unfinished multipart upload. */
  dir: string;
  /** Unfinished multipart uploads of the bucket (s3rver has no ListMultipartUploads; its directory tells). */
  uploadsLeft(bucket: string): Promise<string[]>;
  /** Dates an object (its Last-Modified) or an unfinished upload (its Initiated) back to `when`. */
  backdate(bucket: string, what: { key: string } | { uploadId: string }, when: Date): Promise<void>;
  close(): Promise<void>;
}

/**
 * s3rver on 127.0.0.1 (random port), with AbortMultipartUpload added: s3rver 3.7 answers it 405, so without this
 * every aborted upload would stay on its disk whatever the client does. ListMultipartUploads (NotImplemented in
 * s3rver) is answered from its upload directory: one `<uploadId>/key` file per upload, dated when it started.
 */
export async function startS3(): Promise<TestS3> {
  const dir = await tempDir('s3rver');
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir });
  server.middleware.unshift(async (ctx, next) => {
    // s3rver reads `bytes=0-0` as `bytes=0-` (its `end || Infinity`) and sends the whole object: cut it to the first byte.
    if (ctx.method === 'GET' && ctx.get('range') === 'bytes=0-0') {
      await next();
      const total = /\/(\d+)$/.exec(String(ctx.response.get('content-range')))?.[1];
      if (ctx.status === 206 && total && ctx.body instanceof Readable) {
        const whole = ctx.body;
        const first = await new Promise<Buffer>((resolve, reject) => {
          whole.once('error', reject);
          whole.once('readable', () => resolve(Buffer.from((whole.read() as Buffer).subarray(0, 1))));
        });
        whole.destroy();
        ctx.body = first;
        ctx.set('content-range', `bytes 0-0/${total}`);
      }
      return;
    }
    if (ctx.method === 'GET' && 'uploads' in ctx.query) {
      const bucket = ctx.path.split('/')[1] ?? '';
      if (!/^[\w.-]+$/.test(bucket)) return next();
      const root = join(dir, bucket, '._S3rver_uploads');
      const uploads = existsSync(root) ? await readdir(root) : [];
      const listed = await Promise.all(
        uploads.map(async (id) => {
          const keyFile = join(root, id, 'key');
          return { id, key: await readFile(keyFile, 'utf8'), initiated: (await stat(keyFile)).mtime.toISOString() };
        }),
      );
      const prefix = typeof ctx.query.prefix === 'string' ? ctx.query.prefix : '';
      const esc = (x: string) => x.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
      ctx.type = 'application/xml';
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${esc(bucket)}</Bucket><IsTruncated>false</IsTruncated>${listed
        .filter((u) => u.key.startsWith(prefix))
        .map((u) => `<Upload><Key>${esc(u.key)}</Key><UploadId>${u.id}</UploadId><Initiated>${u.initiated}</Initiated></Upload>`)
        .join('')}</ListMultipartUploadsResult>`;
      return;
    }
    const uploadId = ctx.query.uploadId;
    if (ctx.method !== 'DELETE' || typeof uploadId !== 'string') return next();
    const bucket = ctx.path.split('/')[1] ?? '';
    const uploadDir = join(dir, bucket, '._S3rver_uploads', uploadId);
    if (!/^[\w-]+$/.test(uploadId) || !/^[\w.-]+$/.test(bucket) || !existsSync(uploadDir)) {
      ctx.status = 404;
      ctx.type = 'application/xml';
      ctx.body = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>';
      return;
    }
    await rm(uploadDir, { recursive: true, force: true });
    ctx.status = 204;
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    dir,
    async uploadsLeft(bucket) {
      const root = join(dir, bucket, '._S3rver_uploads');
      return existsSync(root) ? readdir(root) : [];
    },
    async backdate(bucket, what, when) {
      // s3rver keeps `<key>._S3rver_object` (its mtime is the Last-Modified) and `._S3rver_uploads/<id>/key`.
      const path = 'key' in what ? join(dir, bucket, `${what.key}._S3rver_object`) : join(dir, bucket, '._S3rver_uploads', what.uploadId, 'key');
      await utimes(path, when, when);
    },
    async close() {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
