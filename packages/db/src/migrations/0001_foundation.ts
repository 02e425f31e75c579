import { type Kysely, sql } from 'kysely';

// Migrations use raw SQL: it is the schema's clearest description and PostgreSQL-specific anyway.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE SCHEMA IF NOT EXISTS platform;
    CREATE SCHEMA IF NOT EXISTS user_data;

    CREATE TABLE platform.users (
      id uuid PRIMARY KEY,
      email text NOT NULL,
      name text NOT NULL,
      jwt_subject text UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX users_email_key ON platform.users (lower(email));

    CREATE TABLE platform.sessions (
      id uuid PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    );

    CREATE TABLE platform.api_keys (
      id uuid PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      name text NOT NULL,
      token_hash text NOT NULL UNIQUE,
      key_prefix text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz,
      last_used_at timestamptz,
      revoked_at timestamptz
    );
    CREATE INDEX api_keys_user_idx ON platform.api_keys (user_id);

    CREATE TABLE platform.workspaces (
      id uuid PRIMARY KEY,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
      ddl_policy_group_id uuid,
      workflow_editor_policy_group_id uuid,
      policy_editor_policy_group_id uuid,
      mcp_timeout_ms integer NOT NULL DEFAULT 300000 CHECK (mcp_timeout_ms BETWEEN 30000 AND 3600000),
      custom_prompt text NOT NULL DEFAULT '',
      auto_embed_files boolean NOT NULL DEFAULT false,
      auto_embed_tables boolean NOT NULL DEFAULT false,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );

    CREATE TABLE platform.memberships (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      user_id uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('admin', 'member')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, user_id)
    );
    CREATE INDEX memberships_user_idx ON platform.memberships (user_id);

    CREATE TABLE platform.invitations (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      email text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'member')),
      invited_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      accepted_at timestamptz,
      cancelled_at timestamptz
    );
    CREATE UNIQUE INDEX invitations_pending_key ON platform.invitations (workspace_id, lower(email))
      WHERE accepted_at IS NULL AND cancelled_at IS NULL;
    CREATE INDEX invitations_email_idx ON platform.invitations (lower(email))
      WHERE accepted_at IS NULL AND cancelled_at IS NULL;

    CREATE TABLE platform.redirect_uris (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      redirect_uri text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, redirect_uri)
    );

    CREATE TABLE platform.policy_groups (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      user_ids uuid[] NOT NULL DEFAULT '{}',
      stf_ids uuid[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX policy_groups_workspace_idx ON platform.policy_groups (workspace_id);

    ALTER TABLE platform.workspaces
      ADD FOREIGN KEY (ddl_policy_group_id) REFERENCES platform.policy_groups(id) ON DELETE SET NULL,
      ADD FOREIGN KEY (workflow_editor_policy_group_id) REFERENCES platform.policy_groups(id) ON DELETE SET NULL,
      ADD FOREIGN KEY (policy_editor_policy_group_id) REFERENCES platform.policy_groups(id) ON DELETE SET NULL;

    CREATE TABLE platform.audit_logs (
      id uuid PRIMARY KEY,
      workspace_id uuid,
      user_id uuid,
      api_key_id uuid,
      action text NOT NULL,
      resource_type text NOT NULL,
      resource_id text,
      details jsonb NOT NULL DEFAULT '{}',
      request_id text,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX audit_logs_workspace_idx ON platform.audit_logs (workspace_id, id DESC);
    CREATE INDEX audit_logs_action_idx ON platform.audit_logs (workspace_id, action text_pattern_ops);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP SCHEMA platform CASCADE`.execute(db);
}
