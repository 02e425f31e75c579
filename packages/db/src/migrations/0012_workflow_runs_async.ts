import { type Kysely, sql } from 'kysely';

/**
 * Runs that start by themselves (issue 19): a run may be `queued` (recorded, waiting for a process of the job queue
 * to claim it) and end `cancelled`; it says what started it (`trigger`: a request that waits for it, an async
 * request, a schedule, a webhook, an event) and which schedule, hook or trigger (`trigger_id`); a cancel asked while
 * it runs is a timestamp its process reads with its heartbeat.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_runs DROP CONSTRAINT workflow_runs_status_check;
    ALTER TABLE platform.workflow_runs
      ADD CONSTRAINT workflow_runs_status_check CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
      ADD COLUMN trigger text NOT NULL DEFAULT 'request' CHECK (trigger IN ('request', 'async', 'schedule', 'webhook', 'event')),
      ADD COLUMN trigger_id uuid,
      ADD COLUMN queued_at timestamptz,
      ADD COLUMN cancel_requested_at timestamptz;
    -- The queued runs: a workspace's count (its cap), and the oldest (the sweep); only queued rows are in it.
    CREATE INDEX workflow_runs_queued_idx ON platform.workflow_runs (workspace_id, queued_at) WHERE status = 'queued';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX platform.workflow_runs_queued_idx;
    DELETE FROM platform.workflow_runs WHERE status IN ('queued', 'cancelled');
    ALTER TABLE platform.workflow_runs DROP CONSTRAINT workflow_runs_status_check,
      DROP COLUMN trigger, DROP COLUMN trigger_id, DROP COLUMN queued_at, DROP COLUMN cancel_requested_at;
    ALTER TABLE platform.workflow_runs ADD CONSTRAINT workflow_runs_status_check CHECK (status IN ('running', 'succeeded', 'failed'));
  `.execute(db);
}
