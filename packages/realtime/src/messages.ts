import { LOGICAL_NAME } from '@wds/sql-rewriter';
import * as v from 'valibot';

/**
 * What travels over `GET /ws`. Server → client: `connected` once, then row events, `pong`, `subscribed` and `error`.
 * Client → server: `ping`, `subscribe`, `unsubscribe` (docs/automation.md, "Realtime").
 */
export type ServerMessage =
  | { type: 'connected'; data: { workspace_id: string; user_id: string; tables: string[] | null } }
  | { type: 'RowInserted' | 'RowUpdated'; data: { table_name: string; row: Record<string, unknown>; truncated?: true } }
  | { type: 'RowDeleted'; data: { table_name: string; id: unknown } }
  | { type: 'subscribed'; data: { tables: string[] | null } }
  | { type: 'pong' }
  /** To those who may approve it (docs/approvals.md#waiting): a statement waits for approval. */
  | {
      type: 'SqlProposalCreated';
      data: { proposal_id: string; operation: string; affected_tables: string[]; proposed_by: string; created_at: string; expires_at: string };
    }
  | { type: 'error'; data: { code: string; error: string } };

/** A table's logical name as the SQL endpoint spells it (sql-rewriter's names: lower case, at most 23 characters). */
const Table = v.pipe(v.string(), v.regex(LOGICAL_NAME, 'a table name'));
/** How many tables one connection may name. */
export const MAX_TABLES = 100;
const Tables = v.pipe(v.array(Table), v.maxLength(MAX_TABLES));

export const ClientMessage = v.variant('type', [
  v.object({ type: v.literal('ping') }),
  /** Only these tables from now on; `tables` absent or null: every table. */
  v.object({ type: v.literal('subscribe'), tables: v.optional(v.nullable(Tables)) }),
  v.object({ type: v.literal('unsubscribe'), tables: Tables }),
]);
export type ClientMessage = v.InferOutput<typeof ClientMessage>;

/** The `tables` query parameter: comma-separated names; absent or empty: every table. */
export function parseTablesParam(value: string | null): string[] | null {
  if (value === null || value.trim() === '') return null;
  const r = v.safeParse(Tables, value.split(',').map((t) => t.trim()).filter(Boolean));
  if (!r.success) throw new Error(`tables: ${r.issues[0].message}`);
  return r.output;
}
