import { createHash } from 'node:crypto';
import { type AuditLog, type Database, type Db, newId, type NewAuditLog, sql } from '@wds/db';
import type { QueryCreator, RawBuilder } from 'kysely';
import type { AuditLogView } from './views.js';

export interface AuditEntry {
  workspaceId: string | null;
  userId: string | null;
  apiKeyId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  /** Never secrets, tokens or file contents: callers pass only what is safe to show an admin. */
  details?: Record<string, unknown>;
  requestId?: string | null;
  /** The interface the operation came through (`http`, `mcp`); omitted for the service's own work. */
  transport?: 'http' | 'mcp' | null;
}

/** An entry as the row it is stored as, with a new id. */
const auditRow = (e: AuditEntry): NewAuditLog => ({
  id: newId(),
  workspace_id: e.workspaceId,
  user_id: e.userId,
  api_key_id: e.apiKeyId,
  action: e.action,
  resource_type: e.resourceType,
  resource_id: e.resourceId,
  details: JSON.stringify(e.details ?? {}),
  request_id: e.requestId ?? null,
  transport: e.transport ?? null,
});

export async function recordAudit(db: Db, e: AuditEntry): Promise<void> {
  await auditInsert(db, e).execute();
}

/**
 * The INSERT of an entry, not yet executed, on `q`: a Db or a transaction, or the query creator of a `with(…)`, so
 * that the entry is written by the very statement of the work it records (a data-modifying CTE: one round trip,
 * both rows or neither).
 */
export function auditInsert(q: QueryCreator<Database>, e: AuditEntry) {
  return q.insertInto('platform.audit_logs').values(auditRow(e));
}

/** The columns of an audit entry, in the order AUDIT_INSERT and auditInsertSelect take them. */
const AUDIT_COLUMNS = 'id, workspace_id, user_id, api_key_id, action, resource_type, resource_id, details, request_id, transport';

/** The INSERT of audit entries, up to its VALUES: followed by one or more `auditValuesSql` rows, comma-separated. */
export const AUDIT_INSERT = `INSERT INTO platform.audit_logs (${AUDIT_COLUMNS}) VALUES`;

/**
 * The INSERT of the entries `rows` selects, for entries the database derives from other rows in the same statement
 * (a sweep's): `rows` is a SELECT of the audit columns in their order (id, workspace_id, user_id, api_key_id, action,
 * resource_type, resource_id, details, request_id, transport).
 */
export function auditInsertSelect(rows: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`INSERT INTO platform.audit_logs (${sql.raw(AUDIT_COLUMNS)}) ${rows}`;
}

/** One audit entry as a VALUES row of `AUDIT_INSERT`, with escaped literals. */
export function auditValuesSql(e: AuditEntry, literal: (s: string) => string): string {
  const row: Record<string, unknown> = { ...auditRow(e) };
  return `(${AUDIT_COLUMNS.split(', ')
    .map((column) => {
      const x = row[column];
      return x === null || x === undefined ? 'NULL' : literal(String(x));
    })
    .join(', ')})`;
}

/**
 * The call that writes an audit entry in the transaction of the workspace write it records, on that workspace's own
 * connection (migrations 0022 and 0023, `user_data.wds_audit`): the entry as JSON text and its MAC with `key` (read
 * from `platform.audit_key` by the service), which the function checks before it writes anything. `pid` is the
 * backend of the connection the call goes to (pg's `client.processID`): the function writes the entry only there.
 */
export function auditInTransactionSql(e: AuditEntry & { workspaceId: string }, pid: number, key: string, literal: (s: string) => string): string {
  // The row's columns, with `details` as JSON rather than its text, and the backend it is bound to.
  const entry = JSON.stringify({ ...auditRow(e), details: e.details ?? {}, pid });
  const mac = createHash('sha256').update(`${key}:${entry}`, 'utf8').digest('hex');
  return `SELECT user_data.wds_audit(${literal(entry)}, ${literal(mac)})`;
}

/** The key `auditInTransactionSql` signs with (`platform.audit_key`, migration 0022). */
export async function loadAuditKey(pool: { query(text: string): Promise<{ rows: { key?: unknown }[] }> }): Promise<string> {
  const r = await pool.query('SELECT key FROM platform.audit_key LIMIT 1');
  const key = r.rows[0]?.key;
  if (typeof key !== 'string' || !key) throw new Error('platform.audit_key holds no key (migration 0022)');
  return key;
}

/**
 * The INSERT of an audit entry as SQL text with escaped literals, for callers that must append it to a statement
 * batch of their own transaction (one round trip, and the entry commits or rolls back with the work it records).
 */
export function auditInsertSql(e: AuditEntry, literal: (s: string) => string): string {
  return `${AUDIT_INSERT} ${auditValuesSql(e, literal)}`;
}

export interface AuditFilter {
  workspaceId: string;
  userId?: string | undefined;
  /** A trailing `*` makes it a prefix match. */
  action?: string | undefined;
  resourceType?: string | undefined;
  resourceId?: string | undefined;
  /** Entries written at or after this time. */
  since?: Date | undefined;
  /** Entries written before this time. */
  until?: Date | undefined;
  limit: number;
  offset: number;
}

const toView = (r: AuditLog): AuditLogView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  user_id: r.user_id,
  api_key_id: r.api_key_id,
  action: r.action,
  resource_type: r.resource_type,
  resource_id: r.resource_id,
  details: r.details,
  request_id: r.request_id,
  transport: r.transport,
  created_at: r.created_at.toISOString(),
});

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Newest first. */
export async function listAuditLogs(db: Db, f: AuditFilter): Promise<AuditLogView[]> {
  let q = db.selectFrom('platform.audit_logs').selectAll().where('workspace_id', '=', f.workspaceId);
  if (f.userId) q = q.where('user_id', '=', f.userId);
  if (f.action) {
    q = f.action.endsWith('*')
      ? q.where('action', 'like', `${escapeLike(f.action.slice(0, -1))}%`)
      : q.where('action', '=', f.action);
  }
  if (f.resourceType) q = q.where('resource_type', '=', f.resourceType);
  if (f.resourceId) q = q.where('resource_id', '=', f.resourceId);
  if (f.since) q = q.where('created_at', '>=', f.since);
  if (f.until) q = q.where('created_at', '<', f.until);
  const rows = await q.orderBy('id', 'desc').limit(f.limit).offset(f.offset).execute();
  return rows.map(toView);
}
