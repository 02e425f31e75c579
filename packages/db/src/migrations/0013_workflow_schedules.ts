import { type Kysely, sql } from 'kysely';

/**
 * Cron schedules of workflows (issue 19). A schedule is due when `next_run_at` has come; the process that fires it
 * locks its row (FOR UPDATE SKIP LOCKED), queues the run and moves `next_run_at` to the next tick in one transaction,
 * so each tick fires once across all processes. It runs as its creator (a schedule goes with its user).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.workflow_schedules (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      workflow_id uuid NOT NULL REFERENCES platform.workflows(id) ON DELETE CASCADE,
      name text NOT NULL,
      cron text NOT NULL,
      timezone text NOT NULL,
      input jsonb,
      paused boolean NOT NULL DEFAULT false,
      created_by uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      next_run_at timestamptz NOT NULL,
      last_run_at timestamptz,
      last_run_id uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX workflow_schedules_workflow_idx ON platform.workflow_schedules (workflow_id, id);
    -- The due ones: what the ticker of every process asks for.
    CREATE INDEX workflow_schedules_due_idx ON platform.workflow_schedules (next_run_at) WHERE NOT paused;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE platform.workflow_schedules`.execute(db);
}
