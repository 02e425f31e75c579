/** A file's bytes for a download: the whole file, one byte range of it, or the range's refusal. */
import type { Db, Uuid } from '@wds/db';
import { notFound } from '@wds/errors';
import type { BlobStore, ByteRange } from './blob-store.js';
import { parseByteRange } from './byte-range.js';
import { getFile } from './files.js';
import type { FileView } from './views.js';

export interface DownloadDeps {
  db: Db;
  blobs: Pick<BlobStore, 'get'>;
}

export type FileDownload =
  /** The range starts past the end: nothing is opened (HTTP 416). */
  | { file: FileView; range: 'unsatisfiable' }
  /** `content` holds the range's bytes, or the whole file's when `range` is undefined. */
  | { file: FileView; range: ByteRange | undefined; content: NodeJS.ReadableStream };

/**
 * Opens a live file of the workspace, honouring one `Range` header (`rangeHeader`). NOT_FOUND for an unknown file,
 * and `File content not found` when its record outlived its blob.
 */
export async function openFileDownload(deps: DownloadDeps, workspaceId: string, fileId: Uuid, rangeHeader: string | undefined): Promise<FileDownload> {
  const { blob_key: key, ...file } = await getFile(deps.db, workspaceId, fileId);
  const range = parseByteRange(rangeHeader, file.size);
  if (range === 'unsatisfiable') return { file, range };
  const content = await deps.blobs.get(key, range).catch((err: { code?: string }) => {
    if (err?.code === 'ENOENT') throw notFound('File content');
    throw err;
  });
  return { file, range, content };
}
