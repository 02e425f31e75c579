/**
 * An upload stored: the bytes into the blob store first, then the file record. A refusal after the bytes were
 * written (bad fields, a failed insert or follow-up) removes them; an upload over the limit or a client gone
 * mid-way leaves nothing (the blob store removes what it wrote).
 */
import { type Db, newId } from '@wds/db';
import { ServiceError, validationError } from '@wds/errors';
import { UploadError } from '@wds/uploads';
import { type BlobStore, BlobTooLargeError, type PutResult } from './blob-store.js';
import { type FileFields, type StorableInputRules, checkFileFields } from './file-fields.js';
import { insertFile } from './files.js';
import type { FileView } from './views.js';

export interface UploadDeps {
  db: Db;
  blobs: Pick<BlobStore, 'put' | 'delete'>;
  /** Largest file accepted, in bytes: more is 413 PAYLOAD_TOO_LARGE. */
  maxBytes: number;
  /** Aborted when the client is gone: the put stops and removes what it wrote. */
  signal?: AbortSignal | undefined;
  rules: StorableInputRules;
  /** Told before the 413 is thrown: the rest of the body is not read (HTTP closes the connection). */
  onTooLarge?: () => void;
}

/** Streams bytes into the blob store (with the upload's limit and signal). */
export type PutUpload = (source: AsyncIterable<Uint8Array>) => Promise<PutResult>;

export interface Upload {
  workspaceId: string;
  createdBy: string | null;
  /** Reads the body: hands the bytes to `put` and returns what it answered, with the other fields as received. */
  receive(put: PutUpload): Promise<{ blob: PutResult; fields: FileFields }>;
  /**
   * Runs in the transaction that writes the file's record (what must exist exactly when the file does: the events of
   * workflow triggers); throwing here writes neither and removes the bytes.
   */
  recorded?(file: FileView, tx: Db): Promise<void>;
  /** Runs once the record is in (audit, embedding); throwing here still removes the bytes. */
  onStored?(file: FileView): Promise<void> | void;
}

export async function storeUpload(deps: UploadDeps, upload: Upload): Promise<FileView> {
  let written: PutResult | undefined;
  try {
    const { blob, fields } = await upload.receive(async (source) => {
      written = await deps.blobs.put(source, { maxBytes: deps.maxBytes, signal: deps.signal });
      return written;
    });
    const checked = checkFileFields(fields, deps.rules);
    const record = (db: Db) => insertFile(db, {
      id: newId(),
      workspaceId: upload.workspaceId,
      filename: checked.filename,
      contentType: checked.contentType,
      size: blob.size,
      sha256: blob.sha256,
      blobKey: blob.key,
      metadata: checked.metadata,
      createdBy: upload.createdBy,
    });
    const { recorded } = upload;
    const file = recorded
      ? await deps.db.transaction().execute(async (tx) => {
          const f = await record(tx);
          await recorded(f, tx);
          return f;
        })
      : await record(deps.db);
    await upload.onStored?.(file);
    return file;
  } catch (err) {
    if (written) await deps.blobs.delete(written.key).catch(() => undefined);
    if (err instanceof BlobTooLargeError) {
      deps.onTooLarge?.();
      throw new ServiceError('PAYLOAD_TOO_LARGE', 'The file is larger than the limit', `at most ${deps.maxBytes} bytes`);
    }
    // A malformed body (the body parser's own error) is the client's 400.
    if (err instanceof UploadError) throw validationError(err.message);
    throw err;
  }
}
