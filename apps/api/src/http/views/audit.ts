/** The views of the audit log: @wds/audit owns the entry's view. */
export { AuditLogView as AuditLogEntry } from '@wds/audit';
