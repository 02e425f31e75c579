/**
 * The contract every blob store keeps (filesystem and S3): blobs are written whole or not at all, under a key the
 * store picks, with their SHA-256 and size measured while they stream. File records (files.ts) point at blobs by
 * key; nothing else about a blob is stored.
 */
import { randomBytes } from 'node:crypto';

export interface PutResult {
  /** Where the blob lives; random, never derived from user input. */
  key: string;
  size: number;
  /** Hex. */
  sha256: string;
}

export interface PutOptions {
  /** Crossing it rejects with BlobTooLargeError at once; the rest of the source is not read. */
  maxBytes?: number;
  /** Aborting rejects with the signal's reason (an AbortError) and removes what was written. */
  signal?: AbortSignal;
}

export interface ByteRange {
  /** First byte, from 0. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface BlobStore {
  /**
   * Streams `source` into a NEW blob (the store picks the key). The content is hashed (SHA-256) and counted while it
   * streams. With `maxBytes`, crossing the limit rejects with BlobTooLargeError as soon as it happens (stop reading,
   * destroy the source). On ANY failure (source error, abort via `signal`, too large, disk/S3 error) nothing of the
   * blob remains (temp file removed / multipart upload aborted) and the promise rejects. Only a complete blob is ever
   * visible under its key.
   *
   * Chunks are not copied: a source must not reuse a chunk after yielding it (Node streams never do).
   */
  put(source: AsyncIterable<Uint8Array>, opts?: PutOptions): Promise<PutResult>;
  /** The blob's bytes, or the inclusive byte range [start, end]; rejects with an Error whose `code` is 'ENOENT' when missing. */
  get(key: string, range?: ByteRange): Promise<NodeJS.ReadableStream>;
  /** Removes the blob; missing is fine. */
  delete(key: string): Promise<void>;
  /** Whether the blob exists (tests and repair). */
  has(key: string): Promise<boolean>;
  /**
   * Every complete blob of this store, in no particular order, with when it was last written (for the orphan sweep:
   * a blob is only ever written by its put). Only keys this store could have made are listed, never anything else
   * that shares its directory or bucket prefix.
   */
  list(): AsyncIterable<StoredBlob>;
  /**
   * Removes what unfinished puts left behind (a crash mid-upload) once older than `olderThanMs`: the filesystem
   * store's temp files not written to for that long, the S3 store's multipart uploads started that long ago. A put
   * still streaming keeps its temp file fresh, but an S3 multipart upload is dated by its start: pass at least the
   * longest an upload may take. Returns how many were removed.
   */
  cleanTemp(olderThanMs: number): Promise<number>;
}

export interface StoredBlob {
  key: string;
  size: number;
  /** When the blob was written (S3: its Last-Modified, which for a multipart upload may be when it started). */
  modifiedAt: Date;
}

/** Whether `key` is one `newBlobKey` made, under `prefix`. */
export const isBlobKey = (key: string, prefix = ''): boolean => key.startsWith(prefix) && /^[0-9a-f]{32}$/.test(key.slice(prefix.length));

/** The source crossed `maxBytes`; nothing was kept. */
export class BlobTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The blob is larger than ${limit} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

/** 32 hex characters (128 random bits). */
export const newBlobKey = (): string => randomBytes(16).toString('hex');

/** The error `get` rejects with for a missing blob, shaped like Node's own (code 'ENOENT'). */
/**
 * A blob the store does not have. Its message is what a member may see (a job's error, a file's status): no server
 * path, no store detail; `key` is for the operator's log.
 */
export function blobNotFound(key: string): Error & { code: 'ENOENT'; key: string } {
  return Object.assign(new Error("the file's content is missing from the store"), { code: 'ENOENT' as const, key });
}

/** Any other failure of the store to read a blob, as a member may see it: the error's code, never its path. */
export function blobUnreadable(key: string, err: unknown): Error & { code: string; key: string } {
  const code = typeof (err as { code?: unknown } | null)?.code === 'string' ? (err as { code: string }).code : 'EIO';
  return Object.assign(new Error(`the store could not read the file's content (${code})`), { code, key, cause: err });
}

/** Throws RangeError unless `range` is whole numbers with 0 <= start <= end. */
export function checkRange(range: ByteRange | undefined): void {
  if (!range) return;
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`invalid byte range ${start}-${end}`);
  }
}
