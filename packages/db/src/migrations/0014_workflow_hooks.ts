import { type Kysely, sql } from 'kysely';

/**
 * Inbound webhooks of workflows (issue 19): a hook's URL names it (`/api/v1/hooks/<id>`); a delivery is verified with
 * the hook's secret (sealed at rest with SECRETS_KEY, bound to the hook's id) and runs the workflow as the hook's
 * creator. Deliveries carrying an id are remembered, so a redelivery answers the first run instead of a second one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.workflow_hooks (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      workflow_id uuid NOT NULL REFERENCES platform.workflows(id) ON DELETE CASCADE,
      name text NOT NULL,
      secret_sealed bytea NOT NULL,
      paused boolean NOT NULL DEFAULT false,
      created_by uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      secret_rotated_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX workflow_hooks_workflow_idx ON platform.workflow_hooks (workflow_id, id);

    CREATE TABLE platform.workflow_hook_deliveries (
      hook_id uuid NOT NULL REFERENCES platform.workflow_hooks(id) ON DELETE CASCADE,
      delivery_id text NOT NULL,
      run_id uuid NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (hook_id, delivery_id)
    );
    CREATE INDEX workflow_hook_deliveries_received_idx ON platform.workflow_hook_deliveries (received_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE platform.workflow_hook_deliveries; DROP TABLE platform.workflow_hooks;`.execute(db);
}
