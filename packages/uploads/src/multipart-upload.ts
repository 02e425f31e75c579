/**
 * The multipart upload form (docs/files.md#api): part `file` (the bytes, with its filename and type) and an optional
 * part `metadata` (JSON text), in any order, streamed with busboy: the file part is handed on as it arrives (to a blob
 * store) and never buffered. Anything else is an UploadError.
 */
import type { Readable } from 'node:stream';
import Busboy from 'busboy';
import { UploadError } from './errors.js';

const MAX_FIELD_BYTES = 64 * 1024;

export interface MultipartFile {
  filename: string;
  contentType: string;
  stream: Readable;
}

export interface MultipartUpload {
  fields: Record<string, string>;
}

/**
 * Feeds a multipart body through busboy. `onFile` is called once, for the part named `file`, and must consume its
 * stream; the returned promise settles when the whole body has been read and `onFile`'s work is done.
 */
export async function parseMultipartUpload<T>(
  body: Readable,
  headers: Record<string, string | undefined>,
  onFile: (file: MultipartFile) => Promise<T>,
): Promise<{ fields: Record<string, string>; file: T }> {
  const contentType = headers['content-type'];
  if (!contentType || !/^multipart\/form-data/i.test(contentType)) throw new UploadError('expected a multipart/form-data body');
  let bb: Busboy.Busboy;
  try {
    bb = Busboy({ headers: { 'content-type': contentType }, defParamCharset: 'utf8', limits: { files: 1, fields: 10, fieldSize: MAX_FIELD_BYTES, parts: 20 } });
  } catch (err) {
    throw new UploadError(`malformed multipart body: ${(err as Error).message}`);
  }
  const fields: Record<string, string> = {};
  let fileWork: Promise<T> | undefined;
  let failure: unknown;
  let finish!: () => void;
  // A failure stops feeding busboy at once (the caller answers without reading the rest of the body).
  const fail = (err: unknown) => {
    failure ??= err;
    body.unpipe(bb);
    finish();
  };

  await new Promise<void>((resolve) => {
    finish = resolve;
    bb.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume();
        fail(new UploadError(`unexpected file part ${JSON.stringify(name)} (send the file as part "file")`));
        return;
      }
      fileWork = onFile({ filename: info.filename ?? '', contentType: info.mimeType || 'application/octet-stream', stream });
      fileWork.catch((err: unknown) => {
        stream.resume();
        fail(err);
      });
    });
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(new UploadError(`${name}: larger than ${MAX_FIELD_BYTES} bytes`));
      else fields[name] = value;
    });
    bb.on('filesLimit', () => fail(new UploadError('only one file part is allowed')));
    bb.on('fieldsLimit', () => fail(new UploadError('too many fields')));
    bb.on('partsLimit', () => fail(new UploadError('too many parts')));
    bb.on('error', (err: Error) => fail(new UploadError(`malformed multipart body: ${err.message}`)));
    bb.on('close', () => resolve());
    body.on('error', (err) => fail(err));
    body.pipe(bb);
  });
  if (failure) {
    await fileWork?.catch(() => undefined);
    throw failure;
  }
  if (!fileWork) throw new UploadError('file: the part "file" is missing');
  return { fields, file: await fileWork };
}
