import { field } from '@wds/db';
import * as v from 'valibot';

/**
 * An audit log entry: what the API answers (apps/api re-exports it). `workspace_id` is null for service-level
 * entries (list_audit_logs, filtering by the workspace, always answers its id). `details` is any value: every writer
 * stores a JSON object (recordAudit `{}` by default), but the column is JSON. `resource_id` is free text (e.g. a
 * comma-separated table list).
 */
export const AuditLogView = v.object({
  id: field.Uuid,
  workspace_id: v.nullable(field.Uuid),
  user_id: v.nullable(field.Uuid),
  api_key_id: v.nullable(field.Uuid),
  action: v.string(),
  resource_type: v.string(),
  resource_id: v.nullable(v.string()),
  details: v.unknown(),
  request_id: v.nullable(v.string()),
  /** The interface the operation came through; null for the service's own work. */
  transport: v.nullable(v.picklist(['http', 'mcp'])),
  created_at: field.Timestamp,
});
export type AuditLogView = v.InferOutput<typeof AuditLogView>;
