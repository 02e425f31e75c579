import { type Db, type DocumentRow, type DocumentVersionRow, newId, sql, type Uuid } from '@wds/db';
import { notFound, validationError } from '@wds/errors';
import { replaceSection, type SectionTarget } from './sections.js';
import type { DocumentSummary, DocumentVersionView, DocumentView } from './views.js';

/** Size limits of a document's fields (checked at the HTTP edge, documented in docs/documents.md). */
export const DOCUMENT_LIMITS = {
  /** Characters of `title`. */
  titleChars: 500,
  /** Characters of `doc_type` and of `status` (each at least 1). */
  labelChars: 100,
  /** UTF-8 bytes of `content` (5 MiB). */
  contentBytes: 5 * 1024 * 1024,
  /** UTF-8 bytes of `metadata` written as JSON (64 KiB). */
  metadataBytes: 64 * 1024,
} as const;

export type DocumentMetadata = Record<string, unknown>;

export interface NewDocument {
  title: string;
  doc_type: string;
  status: string;
  content: string;
  metadata?: DocumentMetadata | null | undefined;
  createdBy: string | null;
}

/** Fields left undefined stay as they are; `metadata` replaces the whole object (null empties it). */
export interface DocumentPatch {
  title?: string | undefined;
  doc_type?: string | undefined;
  status?: string | undefined;
  content?: string | undefined;
  metadata?: DocumentMetadata | null | undefined;
}

export interface DocumentFilter {
  doc_type?: string | undefined;
  status?: string | undefined;
  limit: number;
  offset: number;
}

const SUMMARY_COLUMNS = [
  'id',
  'workspace_id',
  'title',
  'doc_type',
  'status',
  'metadata',
  'version',
  'created_by',
  'created_at',
  'updated_at',
] as const;

type SummaryRow = Pick<DocumentRow, (typeof SUMMARY_COLUMNS)[number]>;

const asMetadata = (m: unknown): DocumentMetadata =>
  typeof m === 'object' && m !== null && !Array.isArray(m) ? (m as DocumentMetadata) : {};

const toSummary = (d: SummaryRow): DocumentSummary => ({
  id: d.id,
  workspace_id: d.workspace_id,
  title: d.title,
  doc_type: d.doc_type,
  status: d.status,
  metadata: asMetadata(d.metadata),
  version: d.version,
  created_by: d.created_by,
  created_at: d.created_at.toISOString(),
  updated_at: d.updated_at.toISOString(),
});

const toView = (d: DocumentRow): DocumentView => ({ ...toSummary(d), content: d.content });

export const toVersionView = (v: DocumentVersionRow): DocumentVersionView => ({
  id: v.id,
  document_id: v.document_id,
  version: v.version,
  title: v.title,
  content: v.content,
  created_by: v.created_by,
  created_at: v.created_at.toISOString(),
});

/** Runs `fn` in the caller's transaction, or in a new one: a content change and its snapshot never part. */
const inTransaction = <T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> =>
  db.isTransaction ? fn(db) : db.transaction().execute(fn);


/** Live (not deleted) documents of the workspace, or the one with this id. */
function live(db: Db, workspaceId: string, id?: Uuid) {
  const q = db.selectFrom('platform.documents').where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
  return id === undefined ? q : q.where('id', '=', id);
}

/** Documents of the workspace in creation order, without their content; `doc_type` and `status` match exactly. */
export async function listDocuments(db: Db, workspaceId: string, filter: DocumentFilter): Promise<DocumentSummary[]> {
  let q = live(db, workspaceId).select(SUMMARY_COLUMNS);
  if (filter.doc_type !== undefined) q = q.where('doc_type', '=', filter.doc_type);
  if (filter.status !== undefined) q = q.where('status', '=', filter.status);
  const rows = await q.orderBy('id').limit(filter.limit).offset(filter.offset).execute();
  return rows.map(toSummary);
}

/** A live document of the workspace with its content; NOT_FOUND for another workspace's, a deleted one or a bad id. */
export async function getDocument(db: Db, workspaceId: string, id: Uuid): Promise<DocumentView> {
  const row = await live(db, workspaceId, id).selectAll().executeTakeFirst();
  if (!row) throw notFound('Document');
  return toView(row);
}

async function insertVersion(
  db: Db,
  doc: { id: string; workspace_id: string; version: number; title: string; content: string },
  createdBy: string | null,
): Promise<void> {
  await db
    .insertInto('platform.document_versions')
    .values({
      id: newId(),
      document_id: doc.id,
      workspace_id: doc.workspace_id,
      version: doc.version,
      title: doc.title,
      content: doc.content,
      created_by: createdBy,
    })
    .execute();
}

/** Creates the document at version 1 together with its version-1 snapshot, so the history holds the current content. */
export async function createDocument(db: Db, workspaceId: string, input: NewDocument): Promise<DocumentView> {
  return inTransaction(db, async (tx) => {
    const row = await tx
      .insertInto('platform.documents')
      .values({
        id: newId(),
        workspace_id: workspaceId,
        title: input.title,
        doc_type: input.doc_type,
        status: input.status,
        content: input.content,
        metadata: JSON.stringify(input.metadata ?? {}),
        version: 1,
        created_by: input.createdBy,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await insertVersion(tx, row, input.createdBy);
    return toView(row);
  });
}

/**
 * Applies a patch. When `content` is given and differs from the stored content, the document's `version` goes up by
 * one and a snapshot of the new content (with the title after the patch) is written in the same transaction. A
 * patch of title, doc_type, status or metadata only — or one whose content is unchanged — adds no version.
 */
export async function updateDocument(
  db: Db,
  workspaceId: string,
  id: Uuid,
  patch: DocumentPatch,
  changedBy: string | null,
): Promise<{ document: DocumentView; versionAdded: boolean }> {
  return inTransaction(db, async (tx) => {
    // Lock the row: concurrent content changes then number their versions one after the other.
    const current = await live(tx, workspaceId, id)
      .select(['id', 'version', 'title'])
      .select(patch.content === undefined ? sql<boolean>`true`.as('same_content') : sql<boolean>`content = ${patch.content}`.as('same_content'))
      .forUpdate()
      .executeTakeFirst();
    if (!current) throw notFound('Document');
    const versionAdded = patch.content !== undefined && !current.same_content;
    const set = {
      ...(patch.title !== undefined ? { title: patch.title } : {}),
      ...(patch.doc_type !== undefined ? { doc_type: patch.doc_type } : {}),
      ...(patch.status !== undefined ? { status: patch.status } : {}),
      ...(patch.metadata !== undefined ? { metadata: JSON.stringify(patch.metadata ?? {}) } : {}),
      ...(versionAdded ? { content: patch.content, version: current.version + 1 } : {}),
    };
    if (Object.keys(set).length === 0) return { document: await getDocument(tx, workspaceId, id), versionAdded };
    const row = await tx
      .updateTable('platform.documents')
      .set({ ...set, updated_at: new Date() })
      .where('id', '=', current.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (versionAdded) await insertVersion(tx, row, changedBy);
    return { document: toView(row), versionAdded };
  });
}

/** Marks the document deleted: it is then NOT_FOUND everywhere and left out of lists. Its versions are kept. */
export async function softDeleteDocument(db: Db, workspaceId: string, id: Uuid): Promise<DocumentSummary> {
  const row = await db
    .updateTable('platform.documents')
    .set({ deleted_at: new Date() })
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .where('id', '=', id)
    .returning(SUMMARY_COLUMNS)
    .executeTakeFirst();
  if (!row) throw notFound('Document');
  return toSummary(row);
}

/** The version snapshots of a live document, newest first; the first one holds the current content. */
export async function listDocumentVersions(
  db: Db,
  workspaceId: string,
  id: Uuid,
  page: { limit: number; offset: number },
): Promise<DocumentVersionView[]> {
  const doc = await live(db, workspaceId, id).select('id').executeTakeFirst();
  if (!doc) throw notFound('Document');
  const rows = await db
    .selectFrom('platform.document_versions')
    .selectAll()
    .where('document_id', '=', doc.id)
    .orderBy('version', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(toVersionView);
}

/**
 * Replaces one section of a document's content (sections.ts) as a content change: a new version when the content
 * differs. The content is read and written under the row lock of `updateDocument`'s transaction.
 */
export async function replaceDocumentSection(
  db: Db,
  workspaceId: string,
  id: Uuid,
  target: SectionTarget,
  changedBy: string | null,
): Promise<{ document: DocumentView; versionAdded: boolean }> {
  return inTransaction(db, async (tx) => {
    const current = await live(tx, workspaceId, id).select(['content']).forUpdate().executeTakeFirst();
    if (!current) throw notFound('Document');
    const content = replaceSection(current.content, target);
    if (Buffer.byteLength(content) > DOCUMENT_LIMITS.contentBytes) {
      throw validationError(`content: the result would be larger than ${DOCUMENT_LIMITS.contentBytes} bytes of UTF-8 text`);
    }
    return updateDocument(tx, workspaceId, id, { content }, changedBy);
  });
}
