/**
 * The S3 blob store (AWS S3 or any S3-compatible server). A put is a multipart upload by `@aws-sdk/lib-storage`
 * fed from a PassThrough: the shared read loop (hashing.ts) hashes and counts each chunk and waits for the
 * PassThrough to drain, and the uploader holds at most `queueSize` parts of `partSizeBytes` in flight, so memory
 * is bounded by about (queueSize + 1) x partSize. A blob of less than one part is a single PutObject.
 *
 * Failure: the body is destroyed with the error; lib-storage then waits for the parts in flight, sends
 * AbortMultipartUpload, and only then rejects, so nothing is left when `put` rejects. `Upload.abort()` is not used:
 * its promise rejects at once while parts are still uploading and the abort request is sent later (or not at all
 * when it fails). The store also sends its own AbortMultipartUpload afterwards (a no-op when lib-storage's went
 * through) and, when the upload completed but the put still fails (an abort that came at the very end), deletes
 * the object.
 *
 * A crash mid-put leaves an unfinished multipart upload (its parts are stored, and billed, until it is aborted):
 * `cleanTemp` aborts those of this store's prefix started long enough ago. A crash between the put and the file
 * record leaves a complete object without a record: `list` lets the orphan sweep (orphans.ts) find it.
 */
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { PassThrough, type Readable } from 'node:stream';
import { type BlobStore, type ByteRange, blobNotFound, checkRange, isBlobKey, newBlobKey, type StoredBlob } from './blob-store.js';
import { abortReason, type Counted, pumpHashed } from './hashing.js';

export interface S3BlobStoreOptions {
  bucket: string;
  /** For S3-compatible servers, e.g. http://127.0.0.1:9000. */
  endpoint?: string;
  /** Default us-east-1. */
  region?: string;
  /** Both or neither; neither uses the SDK's default credential chain. */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** `<endpoint>/<bucket>/<key>` rather than `<bucket>.<endpoint>/<key>` (most S3-compatible servers want it). */
  forcePathStyle?: boolean;
  /** Prepended to every key, e.g. `blobs/`. */
  prefix?: string;
  /** Default 8 MiB; S3's minimum is 5 MiB. */
  partSizeBytes?: number;
  /** Parts uploaded at once; default 4. */
  queueSize?: number;
}

export interface S3BlobStore extends BlobStore {
  readonly client: S3Client;
  readonly bucket: string;
  /** Closes the client's connections. */
  destroy(): void;
}

const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
const DEFAULT_QUEUE_SIZE = 4;

/** Rejection of a write into a body the uploader has closed; the uploader's own error is the one to report. */
class BodyClosed extends Error {}

export function createS3BlobStore(opts: S3BlobStoreOptions): S3BlobStore {
  const config: S3ClientConfig = { region: opts.region ?? 'us-east-1' };
  if (opts.endpoint) config.endpoint = opts.endpoint;
  if (opts.forcePathStyle !== undefined) config.forcePathStyle = opts.forcePathStyle;
  if (opts.accessKeyId && opts.secretAccessKey) {
    config.credentials = { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey };
  }
  const client = new S3Client(config);
  const Bucket = opts.bucket;
  const prefix = opts.prefix ?? '';
  const partSize = opts.partSizeBytes ?? DEFAULT_PART_SIZE;
  const queueSize = opts.queueSize ?? DEFAULT_QUEUE_SIZE;

  return {
    client,
    bucket: Bucket,

    destroy() {
      client.destroy();
    },

    async put(source, putOpts = {}) {
      if (putOpts.signal?.aborted) throw abortReason(putOpts.signal);
      const Key = `${prefix}${newBlobKey()}`;
      const body = new PassThrough({ highWaterMark: 1024 * 1024 });
      // Destroying the body with an error is how a failure reaches the uploader; it must never be an uncaught 'error'.
      body.on('error', () => undefined);
      const upload = new Upload({ client, params: { Bucket, Key, Body: body }, partSize, queueSize, leavePartsOnError: false });
      let uploadError: unknown;
      let uploadFailed = false;
      // Settles after lib-storage has aborted the multipart upload on failure; a failure releases the read loop.
      const uploaded = upload.done().then(
        () => undefined,
        (err: unknown) => {
          uploadFailed = true;
          uploadError = err;
          body.destroy();
        },
      );
      const cleanUp = async () => {
        if (upload.uploadId) await quietly(client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: upload.uploadId })));
      };

      let counted: Counted;
      try {
        counted = await pumpHashed(source, putOpts, (chunk) => writeInto(body, chunk));
        body.end();
      } catch (err) {
        body.destroy(err instanceof Error ? err : new Error(String(err)));
        await uploaded;
        await cleanUp();
        throw err instanceof BodyClosed && uploadFailed ? uploadError : err;
      }
      await uploaded;
      if (uploadFailed) {
        await cleanUp();
        await quietly(client.send(new DeleteObjectCommand({ Bucket, Key })));
        throw uploadError;
      }
      if (putOpts.signal?.aborted) {
        await quietly(client.send(new DeleteObjectCommand({ Bucket, Key })));
        throw abortReason(putOpts.signal);
      }
      return { key: Key, ...counted };
    },

    async get(key, range) {
      checkRange(range);
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }));
        const body = res.Body as Readable | undefined;
        if (!body) throw new Error(`S3 returned no body for ${key}`);
        if (range && !rangeAnswered(res.ContentRange, range)) {
          // A server may ignore Range and send the whole object: never pass that off as the range.
          body.destroy();
          throw new Error(`S3 answered ${res.ContentRange ?? 'no Content-Range'} for bytes=${range.start}-${range.end} of ${key}`);
        }
        return body;
      } catch (err) {
        if ((err as { name?: string })?.name === 'NoSuchKey') throw blobNotFound(key);
        throw err;
      }
    },

    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: key }));
    },

    async has(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket, Key: key }));
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    },

    async *list(): AsyncGenerator<StoredBlob> {
      let ContinuationToken: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ...(ContinuationToken ? { ContinuationToken } : {}) }));
        for (const o of page.Contents ?? []) {
          if (o.Key && isBlobKey(o.Key, prefix)) yield { key: o.Key, size: o.Size ?? 0, modifiedAt: o.LastModified ?? new Date(0) };
        }
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken);
    },

    async cleanTemp(olderThanMs) {
      const cutoff = Date.now() - olderThanMs;
      let removed = 0;
      let KeyMarker: string | undefined;
      let UploadIdMarker: string | undefined;
      for (;;) {
        let page: Awaited<ReturnType<typeof listUploads>>;
        try {
          page = await listUploads(KeyMarker, UploadIdMarker);
        } catch (err) {
          // A server without ListMultipartUploads: its own expiry (a bucket lifecycle rule) has to do this.
          if ((err as { name?: string }).name === 'NotImplemented') return removed;
          throw err;
        }
        for (const u of page.Uploads ?? []) {
          if (!u.Key || !u.UploadId || !isBlobKey(u.Key, prefix) || !u.Initiated || u.Initiated.getTime() >= cutoff) continue;
          await client.send(new AbortMultipartUploadCommand({ Bucket, Key: u.Key, UploadId: u.UploadId })).catch((err: unknown) => {
            if ((err as { name?: string }).name !== 'NoSuchUpload') throw err; // finished or aborted meanwhile
          });
          removed++;
        }
        if (!page.IsTruncated || !(page.NextKeyMarker || page.NextUploadIdMarker)) return removed;
        KeyMarker = page.NextKeyMarker;
        UploadIdMarker = page.NextUploadIdMarker;
      }
    },
  };

  function listUploads(KeyMarker: string | undefined, UploadIdMarker: string | undefined) {
    return client.send(
      new ListMultipartUploadsCommand({ Bucket, Prefix: prefix, ...(KeyMarker ? { KeyMarker } : {}), ...(UploadIdMarker ? { UploadIdMarker } : {}) }),
    );
  }
}

/** Best-effort clean-up request: its failure must not hide the error being reported. */
async function quietly(p: Promise<unknown>): Promise<void> {
  await p.catch(() => undefined);
}

/** Writes into the body, waiting for it to drain when full; rejects with BodyClosed once the uploader closed it. */
function writeInto(body: PassThrough, chunk: Uint8Array): Promise<void> {
  if (body.destroyed) return Promise.reject(new BodyClosed('the upload stopped reading'));
  if (body.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => {
      body.off('drain', onDrain);
      body.off('close', onClose);
    };
    const onDrain = () => {
      done();
      resolve();
    };
    const onClose = () => {
      done();
      reject(new BodyClosed('the upload stopped reading'));
    };
    body.on('drain', onDrain);
    body.on('close', onClose);
  });
}

/** The Content-Range answers the range asked for (its end may be earlier: the object's last byte). */
function rangeAnswered(contentRange: string | undefined, range: ByteRange): boolean {
  const m = contentRange ? /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange) : null;
  return !!m && Number(m[1]) === range.start && Number(m[2]) <= range.end;
}

/** HEAD answers a bare 404 (no body, so no error code) for a missing key. */
function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}
