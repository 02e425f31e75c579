import { type SqlProposalRow, field } from '@wds/db';
import * as v from 'valibot';

/** A proposal's status as it is answered: `expired` is a pending proposal whose time is up (it is not stored). */
export const PROPOSAL_STATUSES = ['pending', 'approved', 'executed', 'failed', 'rejected', 'expired'] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** A stored SQL proposal as members of its workspace see it (docs/approvals.md#a-proposal). */
export const SqlProposalView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  status: v.picklist(PROPOSAL_STATUSES),
  proposed_by: field.Uuid,
  /** The credential it came with: a person's session or login JWT, or an API key (with its id and name). */
  credential: v.object({
    kind: v.picklist(['session', 'jwt', 'api_key']),
    api_key_id: v.nullable(field.Uuid),
    api_key_name: v.nullable(v.string()),
    via_mcp: v.boolean(),
  }),
  original_sql: v.string(),
  /** The statement as rewritten without policies (what the preview showed); policies apply when it runs. */
  transformed_sql: v.string(),
  sql_sha256: v.string(),
  operation: v.string(),
  affected_tables: v.array(v.string()),
  created_at: field.Timestamp,
  expires_at: field.Timestamp,
  decided_by: v.nullable(field.Uuid),
  decided_at: v.nullable(field.Timestamp),
  decision_comment: v.nullable(v.string()),
  /** Set once the approved statement ran: what execute answered. */
  affected_rows: v.nullable(field.NonNegative),
  executed_sql: v.nullable(v.string()),
  /** Set when it failed: the error code and message the statement's execution answered. */
  error_code: v.nullable(v.string()),
  error_message: v.nullable(v.string()),
  finished_at: v.nullable(field.Timestamp),
});
export type SqlProposalView = v.InferOutput<typeof SqlProposalView>;

/** The status a row stands for at `now`. */
export function statusOf(row: Pick<SqlProposalRow, 'status' | 'expires_at'>, now = new Date()): ProposalStatus {
  return row.status === 'pending' && row.expires_at.getTime() <= now.getTime() ? 'expired' : row.status;
}

export const toProposalView = (r: SqlProposalRow, now = new Date()): SqlProposalView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  status: statusOf(r, now),
  proposed_by: r.proposed_by,
  credential: { kind: r.credential_kind, api_key_id: r.api_key_id, api_key_name: r.api_key_name, via_mcp: r.via_mcp },
  original_sql: r.original_sql,
  transformed_sql: r.transformed_sql,
  sql_sha256: r.sql_sha256,
  operation: r.operation,
  affected_tables: r.affected_tables,
  created_at: r.created_at.toISOString(),
  expires_at: r.expires_at.toISOString(),
  decided_by: r.decided_by,
  decided_at: iso(r.decided_at),
  decision_comment: r.decision_comment,
  affected_rows: r.affected_rows === null ? null : Number(r.affected_rows),
  executed_sql: r.executed_sql,
  error_code: r.error_code,
  error_message: r.error_message,
  finished_at: iso(r.finished_at),
});
