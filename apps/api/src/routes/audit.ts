import { listAuditLogs } from '@wds/audit';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { IsoTimestamp, Uuid, pageEntries } from '../http/schemas.js';
import { AuditLogEntry } from '../http/views/index.js';

export const auditRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/audit-logs',
    operation: 'list_audit_logs',
    summary: 'Audit log of the workspace, newest first (admins)',
    auth: 'user',
    workspace: 'header',
    role: 'admin',
    query: v.object({
      user_id: v.optional(Uuid),
      action: v.optional(v.pipe(v.string(), v.maxLength(200))),
      resource_type: v.optional(v.pipe(v.string(), v.maxLength(200))),
      resource_id: v.optional(v.pipe(v.string(), v.maxLength(200))),
      // A time range: entries written at or after `since`, and before `until`.
      since: v.optional(IsoTimestamp),
      until: v.optional(IsoTimestamp),
      ...pageEntries,
    }),
    response: v.array(AuditLogEntry),
    // The entries of reads this process has answered are written after the answer: flushed first, so listed.
    handler: async ({ db, access, query, services }) => {
      await services.sql.flushReadAudits();
      return listAuditLogs(db, {
        workspaceId: access.workspace.id,
        userId: query.user_id,
        action: query.action,
        resourceType: query.resource_type,
        resourceId: query.resource_id,
        since: query.since,
        until: query.until,
        limit: query.limit,
        offset: query.offset,
      });
    },
  }),
];
