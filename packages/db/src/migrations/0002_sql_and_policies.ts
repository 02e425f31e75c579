import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.policies (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      policy_group_id uuid NOT NULL REFERENCES platform.policy_groups(id),
      name text NOT NULL,
      mode text NOT NULL CHECK (mode IN ('allow', 'deny')),
      table_name text NOT NULL,
      operation text NOT NULL CHECK (operation IN ('select', 'insert', 'update', 'delete')),
      condition jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX policies_lookup_idx ON platform.policies (workspace_id, table_name);
    CREATE INDEX policies_group_idx ON platform.policies (policy_group_id);

    -- Workspace roles own the workspace tables; nobody else reaches the service schema.
    REVOKE ALL ON SCHEMA platform FROM PUBLIC;
    REVOKE ALL ON SCHEMA user_data FROM PUBLIC;

    -- UUIDv7 for PostgreSQL < 18: 48-bit Unix milliseconds, version and variant bits, random rest.
    CREATE OR REPLACE FUNCTION user_data.uuidv7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $fn$
      SELECT encode(
        set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
          PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
          FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
    $fn$;

    -- Aborts a write whose new row leaves the caller's policy filter (the rewriter puts it in RETURNING).
    CREATE OR REPLACE FUNCTION user_data.wds_row_check(ok boolean, what text) RETURNS boolean
      LANGUAGE plpgsql IMMUTABLE AS $fn$
      BEGIN
        IF ok IS NOT TRUE THEN
          RAISE EXCEPTION 'row check failed: %', what USING ERRCODE = 'WDS01';
        END IF;
        RETURN true;
      END
    $fn$;
    GRANT EXECUTE ON FUNCTION user_data.uuidv7() TO PUBLIC;
    GRANT EXECUTE ON FUNCTION user_data.wds_row_check(boolean, text) TO PUBLIC;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE platform.policies;
    DROP FUNCTION user_data.wds_row_check(boolean, text);
    DROP FUNCTION user_data.uuidv7();
  `.execute(db);
}
