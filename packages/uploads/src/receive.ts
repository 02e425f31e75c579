/**
 * The two upload forms read into what a file store needs: the bytes handed to `put` as they arrive (never
 * buffered), and the other fields as the client gave them, unchecked (the store checks them with the record).
 */
import type { Readable } from 'node:stream';
import { UploadError } from './errors.js';
import { parseJsonUpload } from './json-upload.js';
import { parseMultipartUpload } from './multipart-upload.js';

export interface UploadFields {
  filename: unknown;
  content_type: unknown;
  metadata: unknown;
}

export interface ReceivedUpload<B> {
  /** What `put` answered for the bytes. */
  blob: B;
  fields: UploadFields;
}

export type PutBytes<B> = (source: AsyncIterable<Uint8Array>) => Promise<B>;

/** The JSON form `{ filename, content_type?, content: base64, metadata? }`; `content` is required. */
export async function receiveJsonUpload<B>(body: AsyncIterable<Uint8Array>, put: PutBytes<B>): Promise<ReceivedUpload<B>> {
  const { content, done } = parseJsonUpload(body);
  const blob = await put(content);
  const { fields, sawContent } = await done;
  if (!sawContent) throw new UploadError('content: required, the file as a base64 string');
  return { blob, fields: { filename: fields.filename, content_type: fields.content_type, metadata: fields.metadata } };
}

/**
 * The multipart form: part `file` (its filename and type are the fields), optional part `metadata` (JSON text).
 * `contentType` is the request's Content-Type header, with the boundary.
 */
export async function receiveMultipartUpload<B>(body: Readable, contentType: string | undefined, put: PutBytes<B>): Promise<ReceivedUpload<B>> {
  const { fields, file } = await parseMultipartUpload(body, { 'content-type': contentType }, async (f) => {
    // A form that ends mid-part destroys the part's stream with an error, possibly before the blob store
    // reads from it: listened to here, it is the upload's 400 (busboy reports it too), not a stray exception.
    f.stream.on('error', () => undefined);
    return { blob: await put(f.stream), filename: f.filename, contentType: f.contentType };
  });
  let metadata: unknown;
  if (fields.metadata !== undefined) {
    try {
      metadata = JSON.parse(fields.metadata);
    } catch {
      throw new UploadError('metadata: not valid JSON');
    }
  }
  return { blob: file.blob, fields: { filename: file.filename || undefined, content_type: file.contentType, metadata } };
}
