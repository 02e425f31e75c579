import { field } from '@wds/db';
import * as v from 'valibot';

/** The view of a file record: what the API answers (apps/api re-exports it). */
export const FileView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  filename: v.string(),
  content_type: v.string(),
  size: field.NonNegative,
  /** Hex. */
  sha256: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)),
  metadata: field.JsonObject,
  created_at: field.Timestamp,
});
export type FileView = v.InferOutput<typeof FileView>;
