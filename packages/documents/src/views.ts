import { field } from '@wds/db';
import * as v from 'valibot';

/** The views of documents and their versions: what the API answers (apps/api re-exports them). */

/** The number of a version snapshot (1 at creation). */
const VersionNumber = v.pipe(v.number(), v.integer(), v.minValue(1));

/** A document as listed: everything but its content. */
export const DocumentSummary = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  title: v.string(),
  doc_type: v.string(),
  status: v.string(),
  metadata: field.JsonObject,
  /** The number of the version snapshot holding the current content. */
  version: VersionNumber,
  created_by: v.nullable(field.Uuid),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type DocumentSummary = v.InferOutput<typeof DocumentSummary>;

export const DocumentView = v.object({ ...DocumentSummary.entries, content: v.string() });
export type DocumentView = v.InferOutput<typeof DocumentView>;

/** A snapshot of the content (and the title it had then), written whenever the content changed. */
export const DocumentVersionView = v.object({
  id: field.Uuid,
  document_id: field.Uuid,
  version: VersionNumber,
  title: v.string(),
  content: v.string(),
  created_by: v.nullable(field.Uuid),
  created_at: field.Timestamp,
});
export type DocumentVersionView = v.InferOutput<typeof DocumentVersionView>;
