/**
 * File records: the metadata of uploaded files in platform.files; the bytes live in the blob store under
 * `blob_key`, written completely before the record is inserted. Every read is scoped to one workspace and skips
 * soft-deleted rows, so another workspace's file, a deleted one and a malformed id are all the same NOT_FOUND.
 */
import type { Db, FileRow, Uuid } from '@wds/db';
import { notFound } from '@wds/errors';
import type { FileView } from './views.js';

export interface NewFile {
  id: string;
  workspaceId: string;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  blobKey: string;
  metadata: Record<string, unknown>;
  createdBy: string | null;
}

/** `size` is bigint: pg hands it back as a string (or a number where an int8 parser is installed). */
const toView = (f: FileRow): FileView => ({
  id: f.id,
  workspace_id: f.workspace_id,
  filename: f.filename,
  content_type: f.content_type,
  size: Number(f.size),
  sha256: f.sha256,
  metadata: (f.metadata ?? {}) as Record<string, unknown>,
  created_at: f.created_at.toISOString(),
});

function liveFiles(db: Db, workspaceId: string) {
  return db.selectFrom('platform.files').selectAll().where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
}

export async function insertFile(db: Db, row: NewFile): Promise<FileView> {
  const inserted = await db
    .insertInto('platform.files')
    .values({
      id: row.id,
      workspace_id: row.workspaceId,
      filename: row.filename,
      content_type: row.contentType,
      size: row.size,
      sha256: row.sha256,
      blob_key: row.blobKey,
      metadata: JSON.stringify(row.metadata),
      created_by: row.createdBy,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(inserted);
}

/** Live files, newest first (ids are UUIDv7, so by id; the index is on (workspace_id, id)). */
export async function listFiles(db: Db, workspaceId: string, page: { limit: number; offset: number }): Promise<FileView[]> {
  const rows = await liveFiles(db, workspaceId).orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
  return rows.map(toView);
}

/** The live file with its blob key; NOT_FOUND for another workspace's or a deleted one. */
export async function getFile(db: Db, workspaceId: string, id: Uuid): Promise<FileView & { blob_key: string }> {
  const row = await liveFiles(db, workspaceId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('File');
  return { ...toView(row), blob_key: row.blob_key };
}

/** Marks the file deleted and returns it; the blob stays (NOT_FOUND as for getFile, also when already deleted). */
export async function softDeleteFile(db: Db, workspaceId: string, id: Uuid): Promise<FileView> {
  const row = await db
    .updateTable('platform.files')
    .set({ deleted_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('File');
  return toView(row);
}
