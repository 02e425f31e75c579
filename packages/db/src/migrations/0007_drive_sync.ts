import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Drive sync of a workspace: its settings and the state of its sync. sync_id is the generation of the sync that
    -- owns the walk right now (a newer run replaces it, and an older run stops writing when it sees that).
    CREATE TABLE platform.drive_sync_configs (
      workspace_id uuid PRIMARY KEY REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      settings jsonb NOT NULL DEFAULT '{}',
      state text NOT NULL DEFAULT 'idle' CHECK (state IN ('idle', 'queued', 'running', 'completed', 'failed')),
      last_synced_at timestamptz,
      last_sync_error text,
      sync_id uuid,
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    -- The Drive folders, shared drives and My Drive a workspace syncs.
    CREATE TABLE platform.drive_sync_roots (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      drive_id text NOT NULL,
      drive_type text NOT NULL CHECK (drive_type IN ('folder', 'shared_drive', 'my_drive')),
      name text NOT NULL,
      shared_drive_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, drive_id),
      -- the target of drive_nodes' foreign key: a node's root is always of the node's workspace
      UNIQUE (workspace_id, id)
    );

    -- What the last walks found under each root. sync_id is the generation that last saw the node: after a complete
    -- walk, nodes of an older generation are gone from Drive and are deleted.
    CREATE TABLE platform.drive_nodes (
      workspace_id uuid NOT NULL,
      root_id uuid NOT NULL,
      drive_file_id text NOT NULL,
      name text NOT NULL,
      mime_type text NOT NULL,
      parent_id text,
      modified_time timestamptz,
      size bigint,
      sync_id uuid NOT NULL,
      PRIMARY KEY (workspace_id, root_id, drive_file_id),
      FOREIGN KEY (workspace_id, root_id) REFERENCES platform.drive_sync_roots (workspace_id, id) ON DELETE CASCADE
    );
    CREATE INDEX drive_nodes_root_sync_idx ON platform.drive_nodes (root_id, sync_id);
    CREATE INDEX drive_nodes_parent_idx ON platform.drive_nodes (workspace_id, parent_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE platform.drive_nodes;
    DROP TABLE platform.drive_sync_roots;
    DROP TABLE platform.drive_sync_configs;
  `.execute(db);
}
