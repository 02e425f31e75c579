import { type Kysely, sql } from 'kysely';

/**
 * Nothing left behind after a crash (issue 14):
 * - a workflow run is written when it starts, owned by the process that runs it (`owner`, that process's instance
 *   id), which marks it alive every few seconds (`heartbeat_at`); a sweep fails running runs whose heartbeat
 *   stopped, as `interrupted`. Rows from before have no heartbeat: their start time stands in for it.
 * - orphan blobs are found by key, so `platform.files.blob_key` gets an index.
 * - a table-row embedding request is recorded per table (`embedding_tables`) and done by a job: the request only
 *   records it, so the status shows the table pending at once, and the job reads whether a regeneration was asked.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_runs ADD COLUMN owner uuid, ADD COLUMN heartbeat_at timestamptz;
    CREATE INDEX workflow_runs_running_idx ON platform.workflow_runs (coalesce(heartbeat_at, started_at)) WHERE status = 'running';

    CREATE INDEX files_blob_key_idx ON platform.files (blob_key);

    -- The last embed or regenerate request of a table, and what its job made of it: requested_at after
    -- reconciled_at means the job has not yet compared the rows with their items since.
    CREATE TABLE platform.embedding_tables (
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      table_name text NOT NULL,
      requested_at timestamptz NOT NULL DEFAULT now(),
      -- A regeneration was asked for and its job has not yet started on it.
      force boolean NOT NULL DEFAULT false,
      reconciled_at timestamptz,
      failed_at timestamptz,
      error text,
      PRIMARY KEY (workspace_id, table_name)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE platform.embedding_tables;
    DROP INDEX platform.files_blob_key_idx;
    DROP INDEX platform.workflow_runs_running_idx;
    ALTER TABLE platform.workflow_runs DROP COLUMN heartbeat_at, DROP COLUMN owner;
  `.execute(db);
}
