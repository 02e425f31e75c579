import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.stfs (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      is_public boolean NOT NULL DEFAULT false,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    CREATE INDEX stfs_workspace_idx ON platform.stfs (workspace_id) WHERE deleted_at IS NULL;

    CREATE TABLE platform.stf_versions (
      id uuid PRIMARY KEY,
      stf_id uuid NOT NULL REFERENCES platform.stfs(id) ON DELETE CASCADE,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      version text NOT NULL,
      runtime text NOT NULL CHECK (runtime IN ('javascript', 'docker', 'wasm')),
      code bytea NOT NULL,
      input_schema jsonb,
      output_schema jsonb,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (stf_id, version)
    );
    CREATE INDEX stf_versions_stf_idx ON platform.stf_versions (stf_id, id DESC);

    -- Values are sealed (AES-256-GCM, bound to stf id and key); they never leave the service in any response.
    CREATE TABLE platform.stf_secrets (
      stf_id uuid NOT NULL REFERENCES platform.stfs(id) ON DELETE CASCADE,
      env_key text NOT NULL,
      sealed_value bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (stf_id, env_key)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE platform.stf_secrets; DROP TABLE platform.stf_versions; DROP TABLE platform.stfs;`.execute(db);
}
