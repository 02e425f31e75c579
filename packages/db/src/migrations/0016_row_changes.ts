import { type Kysely, sql } from 'kysely';

/**
 * Row capture (issue 19): every workspace table gets three statement-level AFTER triggers (insert, update, delete)
 * with transition tables, calling one function that writes the changed rows to `platform.row_changes` in the
 * statement's own transaction and, when there were any, sends `NOTIFY wds_row_changes, '<workspace id>:<batch>'` (delivered at
 * commit, never for a rollback). Realtime (`GET /ws`) and row-event triggers of workflows both read that outbox:
 * whatever path changed the rows (the SQL endpoint, an STF's `sql()`) is captured alike.
 *
 * - The function is SECURITY DEFINER (the workspace role has no right on `platform`), owned by `wds_row_capture`, a
 *   NOLOGIN role that may only write the outbox and read the triggers (the service's own role where it cannot create
 *   one). It trusts nothing the session controls: `search_path` is `pg_catalog, pg_temp` (a temporary relation never
 *   shadows a catalog) and every relation is qualified; it does nothing unless it fires as one of the three capture
 *   triggers with their transition tables; the workspace is the table's owner role (`wds_ws_<hex>`), and the table
 *   must carry that workspace's prefix in `user_data`, else nothing is recorded.
 * - `needs_dispatch` marks the changes a live row trigger of a workflow waits for (one index lookup per statement);
 *   only those are kept until the dispatcher has turned them into workflow events. The rest are pruned after a
 *   short retention (realtime reads a batch within moments of its notification).
 * - The service's own writes to workspace tables (embedding columns) set `wds.row_capture = off` and are not
 *   captured; user SQL cannot change settings.
 * - A soft delete (DELETE on a table with `deleted_at` becomes an UPDATE setting it) is recorded as a delete.
 * - Updates record the new row and the old one with the same `id` (compared as JSON, so whatever type a table gave
 *   its `id`, or none, never fails the user's statement).
 * - The triggers of a new table are created in the transaction of its CREATE TABLE (WorkspaceSql); this migration
 *   adds them to the tables that exist.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.row_changes (
      id bigserial PRIMARY KEY,
      batch bigint NOT NULL,
      workspace_id uuid NOT NULL,
      table_name text NOT NULL,
      op text NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
      row jsonb,
      old jsonb,
      needs_dispatch boolean NOT NULL DEFAULT false,
      -- A change whose owner's policy check failed waits until then before it is tried again.
      dispatch_after timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE SEQUENCE platform.row_change_batches;
    CREATE INDEX row_changes_batch_idx ON platform.row_changes (batch);
    CREATE INDEX row_changes_created_idx ON platform.row_changes (created_at);
    CREATE INDEX row_changes_dispatch_idx ON platform.row_changes (id) WHERE needs_dispatch;
    CREATE INDEX workflow_triggers_table_idx ON platform.workflow_triggers (workspace_id, table_name, event) WHERE NOT paused;
    -- The user whose select policy chose a row event's rows (the trigger's owner then): it runs as them or not at all.
    ALTER TABLE platform.workflow_events ADD COLUMN owner_id uuid;

    CREATE FUNCTION user_data.wds_capture_rows() RETURNS trigger
      LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
      owner_name text;
      ws uuid;
      prefix text;
      logical text;
      op text := lower(TG_OP);
      flagged boolean;
      soft_flagged boolean;
      b bigint;
      n bigint;
    BEGIN
      IF pg_catalog.current_setting('wds.row_capture', true) = 'off' THEN
        RETURN NULL;
      END IF;
      -- Only as one of the three capture triggers, with their transition tables: then wds_new_rows and wds_old_rows
      -- below are those (transition tables are found before any relation), never something the session created.
      IF TG_LEVEL <> 'STATEMENT' OR TG_WHEN <> 'AFTER' OR NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_trigger t
         WHERE t.tgrelid = TG_RELID AND t.tgname = TG_NAME
           AND ((TG_NAME = 'wds_capture_insert' AND TG_OP = 'INSERT' AND t.tgnewtable = 'wds_new_rows' AND t.tgoldtable IS NULL)
             OR (TG_NAME = 'wds_capture_update' AND TG_OP = 'UPDATE' AND t.tgnewtable = 'wds_new_rows' AND t.tgoldtable = 'wds_old_rows')
             OR (TG_NAME = 'wds_capture_delete' AND TG_OP = 'DELETE' AND t.tgoldtable = 'wds_old_rows' AND t.tgnewtable IS NULL))
      ) THEN
        RETURN NULL;
      END IF;
      SELECT r.rolname INTO owner_name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_roles r ON r.oid = c.relowner WHERE c.oid = TG_RELID;
      IF owner_name IS NULL OR owner_name !~ '^wds_ws_[0-9a-f]{32}$' THEN
        RETURN NULL;
      END IF;
      ws := substr(owner_name, 8)::uuid;
      prefix := 'ws_' || replace(ws::text, '-', '_') || '_';
      IF TG_TABLE_SCHEMA <> 'user_data' OR left(TG_TABLE_NAME, length(prefix)) <> prefix THEN
        RETURN NULL;
      END IF;
      logical := substr(TG_TABLE_NAME, length(prefix) + 1);
      flagged := EXISTS (
        SELECT 1 FROM platform.workflow_triggers t
         WHERE t.workspace_id = ws AND t.table_name = logical AND t.event = CASE op WHEN 'insert' THEN 'row_inserted' WHEN 'update' THEN 'row_updated' ELSE 'row_deleted' END AND NOT t.paused);
      b := nextval('platform.row_change_batches');
      IF op = 'insert' THEN
        INSERT INTO platform.row_changes (batch, workspace_id, table_name, op, row, needs_dispatch)
          SELECT b, ws, logical, op, to_jsonb(n_), flagged FROM wds_new_rows n_;
      ELSIF op = 'update' THEN
        -- A soft delete (the rewriter's DELETE on a table with deleted_at) is an update that sets deleted_at: a
        -- delete for everyone who reads the table, so it is recorded as one.
        soft_flagged := EXISTS (
          SELECT 1 FROM platform.workflow_triggers t
           WHERE t.workspace_id = ws AND t.table_name = logical AND t.event = 'row_deleted' AND NOT t.paused);
        INSERT INTO platform.row_changes (batch, workspace_id, table_name, op, row, old, needs_dispatch)
          SELECT b, ws, logical, x.op, CASE WHEN x.op = 'delete' THEN NULL ELSE x.r END, x.o,
                 CASE WHEN x.op = 'delete' THEN soft_flagged ELSE flagged END
            FROM (
              SELECT CASE WHEN jsonb_typeof(n_.r -> 'deleted_at') = 'string' AND jsonb_typeof(o_.r -> 'deleted_at') = 'null'
                          THEN 'delete' ELSE 'update' END AS op,
                     n_.r, o_.r AS o
                FROM (SELECT to_jsonb(x) AS r FROM wds_new_rows x) n_
                LEFT JOIN (SELECT DISTINCT ON (to_jsonb(y) -> 'id') to_jsonb(y) AS r FROM wds_old_rows y ORDER BY to_jsonb(y) -> 'id') o_
                  ON o_.r -> 'id' = n_.r -> 'id'
            ) x;
      ELSE
        INSERT INTO platform.row_changes (batch, workspace_id, table_name, op, old, needs_dispatch)
          SELECT b, ws, logical, op, to_jsonb(o_), flagged FROM wds_old_rows o_;
      END IF;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n > 0 THEN
        PERFORM pg_notify('wds_row_changes', ws::text || ':' || b::text);
      END IF;
      RETURN NULL;
    END
    $fn$;
    REVOKE ALL ON FUNCTION user_data.wds_capture_rows() FROM PUBLIC;

    -- The function runs with the rights of a role that can do nothing else: write the outbox, read the triggers.
    -- (Roles are shared by the cluster's databases: created once, whoever comes first.)
    DO $$
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'wds_row_capture') THEN
        CREATE ROLE wds_row_capture NOLOGIN NOINHERIT;
      END IF;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'role wds_row_capture not created: %', SQLERRM;
    END
    $$;
    DO $$
    BEGIN
      IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = CURRENT_USER) THEN
        EXECUTE 'GRANT wds_row_capture TO ' || quote_ident(CURRENT_USER);
      END IF;
      GRANT USAGE ON SCHEMA platform TO wds_row_capture;
      GRANT INSERT ON platform.row_changes TO wds_row_capture;
      GRANT USAGE ON SEQUENCE platform.row_changes_id_seq, platform.row_change_batches TO wds_row_capture;
      GRANT SELECT (workspace_id, table_name, event, paused) ON platform.workflow_triggers TO wds_row_capture;
      ALTER FUNCTION user_data.wds_capture_rows() OWNER TO wds_row_capture;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'row capture keeps the service role as its owner: %', SQLERRM;
    END
    $$;
    -- Workspace roles create the triggers of their new tables (in the CREATE TABLE's transaction); a trigger
    -- function cannot be called any other way.
    GRANT EXECUTE ON FUNCTION user_data.wds_capture_rows() TO PUBLIC;

    DO $$
    DECLARE
      t record;
    BEGIN
      FOR t IN
        SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
         WHERE c.relnamespace = 'user_data'::regnamespace AND c.relkind IN ('r', 'p') AND r.rolname ~ '^wds_ws_[0-9a-f]{32}$'
      LOOP
        BEGIN
          EXECUTE format('CREATE TRIGGER wds_capture_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS wds_new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_data.wds_capture_rows()', t.rel);
          EXECUTE format('CREATE TRIGGER wds_capture_update AFTER UPDATE ON %s REFERENCING OLD TABLE AS wds_old_rows NEW TABLE AS wds_new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_data.wds_capture_rows()', t.rel);
          EXECUTE format('CREATE TRIGGER wds_capture_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS wds_old_rows FOR EACH STATEMENT EXECUTE FUNCTION user_data.wds_capture_rows()', t.rel);
        EXCEPTION WHEN OTHERS THEN
          RAISE WARNING 'row capture not installed on %: %', t.rel, SQLERRM;
        END;
      END LOOP;
    END
    $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP FUNCTION user_data.wds_capture_rows() CASCADE;
    DO $$
    BEGIN
      IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'wds_row_capture') THEN
        REVOKE ALL ON SCHEMA platform FROM wds_row_capture;
        REVOKE ALL ON platform.workflow_triggers FROM wds_row_capture;
      END IF;
    END
    $$;
    DROP INDEX platform.workflow_triggers_table_idx;
    ALTER TABLE platform.workflow_events DROP COLUMN owner_id;
    DROP TABLE platform.row_changes;
    DROP SEQUENCE platform.row_change_batches;
  `.execute(db);
}
