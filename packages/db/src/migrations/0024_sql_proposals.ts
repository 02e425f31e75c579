import { type Kysely, sql } from 'kysely';

/**
 * Stored SQL proposals and their approval (docs/approvals.md):
 * - four workspace settings: which statements wait for a person (`sql_approval_mode`), whose
 *   (`sql_approval_applies_to`: agents — API keys and MCP sessions — or everyone), who approves besides the admins
 *   (`sql_approver_policy_group_id`) and whether a proposer may approve their own (`sql_self_approval`);
 * - `platform.sql_proposals`: every preview of a non-SELECT statement, and every statement held for approval. A
 *   proposal keeps who proposed it and through which credential, the SQL as sent and as rewritten (without policies:
 *   they are applied when it runs), and its life: pending → approved → executed | failed, or rejected, or expired.
 *   `approved` is taken by one UPDATE from `pending`, so a proposal runs at most once whatever approves it at the same
 *   time; its execution's audit entry names the proposal (details.proposal_id), in the statement's own transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workspaces
      ADD COLUMN sql_approval_mode text NOT NULL DEFAULT 'none'
        CHECK (sql_approval_mode IN ('none', 'write_only', 'ddl_only', 'all')),
      ADD COLUMN sql_approval_applies_to text NOT NULL DEFAULT 'agents'
        CHECK (sql_approval_applies_to IN ('agents', 'everyone')),
      ADD COLUMN sql_approver_policy_group_id uuid REFERENCES platform.policy_groups(id) ON DELETE SET NULL,
      ADD COLUMN sql_self_approval boolean NOT NULL DEFAULT false;

    CREATE TABLE platform.sql_proposals (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      proposed_by uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      credential_kind text NOT NULL CHECK (credential_kind IN ('session', 'jwt', 'api_key')),
      api_key_id uuid,
      api_key_name text,
      via_mcp boolean NOT NULL,
      original_sql text NOT NULL,
      transformed_sql text NOT NULL,
      sql_sha256 text NOT NULL,
      operation text NOT NULL,
      affected_tables text[] NOT NULL,
      status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'executed', 'failed', 'rejected')),
      decided_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      decided_at timestamptz,
      decision_comment text,
      affected_rows bigint,
      executed_sql text,
      error_code text,
      error_message text,
      finished_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX sql_proposals_workspace_idx ON platform.sql_proposals (workspace_id, created_at DESC, id DESC);
    CREATE INDEX sql_proposals_pending_idx ON platform.sql_proposals (workspace_id, expires_at) WHERE status = 'pending';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE platform.sql_proposals;
    ALTER TABLE platform.workspaces
      DROP COLUMN sql_approval_mode,
      DROP COLUMN sql_approval_applies_to,
      DROP COLUMN sql_approver_policy_group_id,
      DROP COLUMN sql_self_approval;
  `.execute(db);
}
