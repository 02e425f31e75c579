import { type Kysely, sql } from 'kysely';

/**
 * Event triggers of workflows (issue 19): a trigger starts its workflow when something happens in the workspace (a
 * file uploaded, a document changed; rows of a table later). Each event is written in the transaction of the change
 * that caused it (an outbox), one row per matching trigger; a dispatcher in every process with background work turns
 * due events into queued runs, follows their outcome, retries failures with a growing delay and dead-letters an event
 * after its last attempt, where it can be seen and replayed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.workflow_triggers (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      workflow_id uuid NOT NULL REFERENCES platform.workflows(id) ON DELETE CASCADE,
      name text NOT NULL,
      event text NOT NULL CHECK (event IN ('file_uploaded', 'document_changed', 'row_inserted', 'row_updated', 'row_deleted')),
      table_name text,
      paused boolean NOT NULL DEFAULT false,
      created_by uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX workflow_triggers_workflow_idx ON platform.workflow_triggers (workflow_id, id);
    -- What an event looks up in the transaction of its change: the live triggers of a workspace and event.
    CREATE INDEX workflow_triggers_event_idx ON platform.workflow_triggers (workspace_id, event) WHERE NOT paused;

    CREATE TABLE platform.workflow_events (
      id uuid PRIMARY KEY,
      trigger_id uuid NOT NULL REFERENCES platform.workflow_triggers(id) ON DELETE CASCADE,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      workflow_id uuid NOT NULL,
      event jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'dead')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      run_id uuid,
      last_error jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX workflow_events_trigger_idx ON platform.workflow_events (trigger_id, id DESC);
    -- The dispatcher's two questions: which pending events are due, which running ones have a run that ended.
    CREATE INDEX workflow_events_due_idx ON platform.workflow_events (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX workflow_events_running_idx ON platform.workflow_events (run_id) WHERE status = 'running';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE platform.workflow_events; DROP TABLE platform.workflow_triggers;`.execute(db);
}
