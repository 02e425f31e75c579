import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Storage files: metadata here, bytes in the blob store under blob_key (written completely before this row).
    CREATE TABLE platform.files (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      filename text NOT NULL,
      content_type text NOT NULL,
      size bigint NOT NULL,
      sha256 text NOT NULL,
      blob_key text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}',
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    CREATE INDEX files_workspace_idx ON platform.files (workspace_id, id) WHERE deleted_at IS NULL;

    CREATE TABLE platform.documents (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      title text NOT NULL,
      doc_type text NOT NULL,
      status text NOT NULL,
      content text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}',
      version integer NOT NULL DEFAULT 1,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    CREATE INDEX documents_workspace_idx ON platform.documents (workspace_id, id) WHERE deleted_at IS NULL;

    -- A snapshot of a document's content, written in the same transaction as each content change.
    CREATE TABLE platform.document_versions (
      id uuid PRIMARY KEY,
      document_id uuid NOT NULL REFERENCES platform.documents(id) ON DELETE CASCADE,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      version integer NOT NULL,
      title text NOT NULL,
      content text NOT NULL,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (document_id, version)
    );

    CREATE TABLE platform.pinned_charts (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      title text NOT NULL,
      sql_query text NOT NULL,
      chart_type text NOT NULL,
      x_axis_column text,
      y_axis_columns jsonb,
      display_order integer NOT NULL DEFAULT 0,
      description text,
      is_visible boolean NOT NULL DEFAULT true,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    CREATE INDEX pinned_charts_workspace_idx ON platform.pinned_charts (workspace_id, display_order) WHERE deleted_at IS NULL;

    -- Workspace setup items (docs/setup.md#routes).
    CREATE TABLE platform.prompt_rules (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      content text NOT NULL,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX prompt_rules_workspace_idx ON platform.prompt_rules (workspace_id, id);

    CREATE TABLE platform.skills (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      content text NOT NULL,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX skills_workspace_idx ON platform.skills (workspace_id, id);

    CREATE TABLE platform.title_rules (
      workspace_id uuid PRIMARY KEY REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      content text NOT NULL,
      updated_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE platform.chat_templates (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      content text NOT NULL,
      is_active boolean NOT NULL DEFAULT false,
      created_by uuid REFERENCES platform.users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX chat_templates_workspace_idx ON platform.chat_templates (workspace_id, id);
    -- At most one active template per workspace.
    CREATE UNIQUE INDEX chat_templates_one_active ON platform.chat_templates (workspace_id) WHERE is_active;

    ALTER TABLE platform.workspaces ADD COLUMN dashboard_enabled boolean NOT NULL DEFAULT false;

    -- Provider credentials of a workspace (drive sync, SaaS proxy), sealed with SECRETS_KEY; never returned.
    CREATE TABLE platform.workspace_credentials (
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      provider text NOT NULL,
      sealed_value bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (workspace_id, provider)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE platform.workspace_credentials;
    ALTER TABLE platform.workspaces DROP COLUMN dashboard_enabled;
    DROP TABLE platform.chat_templates; DROP TABLE platform.title_rules; DROP TABLE platform.skills;
    DROP TABLE platform.prompt_rules; DROP TABLE platform.pinned_charts; DROP TABLE platform.document_versions;
    DROP TABLE platform.documents; DROP TABLE platform.files;
  `.execute(db);
}
