import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.effects (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    CREATE INDEX effects_workspace_idx ON platform.effects (workspace_id) WHERE deleted_at IS NULL;

    -- One HTTP call definition; mappings are FieldMapping arrays ({ source: { type, value }, target }).
    CREATE TABLE platform.effect_versions (
      id uuid PRIMARY KEY,
      effect_id uuid NOT NULL REFERENCES platform.effects(id) ON DELETE CASCADE,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      version text NOT NULL,
      url text NOT NULL,
      method text NOT NULL,
      header_mappings jsonb NOT NULL DEFAULT '[]',
      body_mappings jsonb NOT NULL DEFAULT '[]',
      query_mappings jsonb NOT NULL DEFAULT '[]',
      input_schema jsonb,
      timeout_secs integer,
      retries integer NOT NULL DEFAULT 0,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (effect_id, version)
    );
    CREATE INDEX effect_versions_effect_idx ON platform.effect_versions (effect_id, id DESC);

    CREATE TABLE platform.workflows (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      allow_anonymous_execute boolean NOT NULL DEFAULT false,
      -- { input_schema?, input_steps, stf_steps, effect_steps } as saved (docs/workflows.md#definition)
      definition jsonb NOT NULL,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    CREATE INDEX workflows_workspace_idx ON platform.workflows (workspace_id) WHERE deleted_at IS NULL;

    -- One execution: what ran, how each step went, how long it took. Effect responses keep their status only.
    CREATE TABLE platform.workflow_runs (
      id uuid PRIMARY KEY,
      workflow_id uuid NOT NULL REFERENCES platform.workflows(id) ON DELETE CASCADE,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
      executed_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      input jsonb,
      output jsonb,
      error jsonb,
      steps jsonb NOT NULL DEFAULT '[]',
      started_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      duration_ms double precision
    );
    CREATE INDEX workflow_runs_workflow_idx ON platform.workflow_runs (workflow_id, id DESC);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE platform.workflow_runs; DROP TABLE platform.workflows;
    DROP TABLE platform.effect_versions; DROP TABLE platform.effects;
  `.execute(db);
}
