import * as v from 'valibot';
import { Timestamp, Uuid } from './common.js';

/** The views of the audit log (@wds/audit). */

/**
 * An audit log entry (@wds/audit AuditLogView). `workspace_id` is nullable in the table (service-level entries) but,
 * as list_audit_logs filters by the workspace, always the workspace's id there. `details` is stated as any value:
 * every writer stores a JSON object (recordAudit `{}` by default, the SQL and workflow writers an object), but the
 * column is typed `Json` and the view `unknown`. `resource_id` is free text (e.g. a comma-separated table list).
 */
export const AuditLogEntry = v.object({
  id: Uuid,
  workspace_id: v.nullable(Uuid),
  user_id: v.nullable(Uuid),
  api_key_id: v.nullable(Uuid),
  action: v.string(),
  resource_type: v.string(),
  resource_id: v.nullable(v.string()),
  details: v.unknown(),
  request_id: v.nullable(v.string()),
  /** The interface the operation came through; null for the service's own work. */
  transport: v.nullable(v.picklist(['http', 'mcp'])),
  created_at: Timestamp,
});
