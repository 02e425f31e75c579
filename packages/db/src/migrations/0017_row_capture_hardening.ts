import { type Kysely, sql } from 'kysely';

/**
 * Row capture, hardened (issue 19 review):
 *
 * - **Signed notifications.** Any session may `NOTIFY` on any channel, so a payload `<workspace>:<batch>` could be
 *   forged by a raw workspace session (another workspace's retained batch replayed to its subscribers, or a flood that
 *   trips their backlog). The payload is now `<workspace>:<batch>:<unix seconds>:<mac>`, the MAC the first 32 hex
 *   digits of `sha256(<key>:<workspace>:<batch>:<seconds>)` with a random key in `platform.row_capture_key`, which
 *   only the service and the capture function's role read. Realtime drops a notification whose MAC does not match,
 *   or whose time is two minutes off (a genuine one replayed later).
 * - **No user code with the function's rights.** `to_jsonb` calls a type's cast to json(b) when it is not built in; a
 *   cast a workspace role wrote (over an enum or range type of its own: only a raw session can create one, the
 *   rewriter allows neither) would run as `wds_row_capture`, which may write any workspace's outbox. A statement on a
 *   table whose columns reach such a type (through domains, arrays, composite fields) is refused (42804). Casts whose
 *   function a superuser owns (extensions') are trusted.
 * - **Its owner** is `wds_row_capture` on servers where the service is no superuser too (0016 left the service's
 *   own rights there).
 * - **Any column names**: a table with a column called like one of the function's variables (`op`, `ws`) or its
 *   row aliases (`x`, `n_`) made its writes fail or, worse, recorded that column as the row (`to_jsonb(x)` reads a
 *   column `x` before the row `x`); rows are now `alias.*` and variables win.
 * - **Updates pair** a new row with its old image only by an `id` no other row of the statement shares.
 * - **Capture time.** `created_at` is the capture's clock time, not its transaction's start: a transaction open for
 *   longer than the retention no longer commits rows that are pruned before realtime reads them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.row_capture_key (key text NOT NULL);
    INSERT INTO platform.row_capture_key (key) VALUES (replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
    REVOKE ALL ON platform.row_capture_key FROM PUBLIC;
    ALTER TABLE platform.row_changes ALTER COLUMN created_at SET DEFAULT clock_timestamp();

    CREATE OR REPLACE FUNCTION user_data.wds_capture_rows() RETURNS trigger
      LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
    #variable_conflict use_variable
    -- (The table's columns may be called anything, op, ws or n_ included: a name in the statements below is this
    -- function's variable, and a row is always alias.*, never a bare alias a column of that name would shadow.)
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
      mac_key text;
      sent text;
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
      -- to_jsonb calls a cast to json(b) of a type that is not built in: one a workspace role wrote (on a type of its
      -- own, which only a raw session could create) would run with this function's rights. A table reaching such a
      -- type (through domains, arrays and composite fields) is refused. The first test is one index range scan of
      -- pg_cast, empty unless some type that is not built in has a cast to json(b) at all (an extension's, say).
      -- Two statements, not one AND: the walk is planned only where the first finds such a cast (plpgsql would plan
      -- the pair on every call, which cost most of a millisecond per statement).
      IF EXISTS (
        SELECT 1 FROM pg_catalog.pg_cast c
         WHERE c.castsource >= 16384::pg_catalog.oid AND c.castmethod = 'f'
           AND c.casttarget IN ('pg_catalog.json'::pg_catalog.regtype, 'pg_catalog.jsonb'::pg_catalog.regtype)
      ) THEN
      IF EXISTS (
        WITH RECURSIVE ty(oid) AS (
          SELECT a.atttypid FROM pg_catalog.pg_attribute a WHERE a.attrelid = TG_RELID AND a.attnum > 0 AND NOT a.attisdropped
          UNION
          SELECT x.oid FROM ty JOIN pg_catalog.pg_type t ON t.oid = ty.oid
           CROSS JOIN LATERAL (
             SELECT t.typbasetype WHERE t.typbasetype <> 0
             UNION ALL SELECT t.typelem WHERE t.typelem <> 0
             UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
           ) x(oid)
        )
        SELECT 1 FROM ty JOIN pg_catalog.pg_cast c ON c.castsource = ty.oid
          JOIN pg_catalog.pg_proc p ON p.oid = c.castfunc JOIN pg_catalog.pg_roles r ON r.oid = p.proowner
         WHERE c.casttarget IN ('pg_catalog.json'::pg_catalog.regtype, 'pg_catalog.jsonb'::pg_catalog.regtype) AND NOT r.rolsuper
      ) THEN
        RAISE EXCEPTION 'row capture: a column of % has a type with a cast to json that is not built in', logical USING ERRCODE = '42804';
      END IF;
      END IF;
      flagged := EXISTS (
        SELECT 1 FROM platform.workflow_triggers t
         WHERE t.workspace_id = ws AND t.table_name = logical AND t.event = CASE op WHEN 'insert' THEN 'row_inserted' WHEN 'update' THEN 'row_updated' ELSE 'row_deleted' END AND NOT t.paused);
      b := nextval('platform.row_change_batches');
      IF op = 'insert' THEN
        INSERT INTO platform.row_changes (batch, workspace_id, table_name, op, row, needs_dispatch)
          SELECT b, ws, logical, op, to_jsonb(n_.*), flagged FROM wds_new_rows n_;
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
                -- Paired by an id that is one row's on both sides only: with a repeated id (a table of the tenant's
                -- own id column) a new row could be paired with another row's old image, and a reader who may see
                -- one of them would learn of the other (a RowDeleted next to a RowUpdated). Unpaired, old is null.
                FROM (SELECT r, count(*) OVER (PARTITION BY r -> 'id') AS k FROM (SELECT to_jsonb(x.*) AS r FROM wds_new_rows x) x2) n_
                LEFT JOIN (SELECT r, count(*) OVER (PARTITION BY r -> 'id') AS k FROM (SELECT to_jsonb(y.*) AS r FROM wds_old_rows y) y2) o_
                  ON o_.r -> 'id' = n_.r -> 'id' AND n_.k = 1 AND o_.k = 1
            ) x;
      ELSE
        INSERT INTO platform.row_changes (batch, workspace_id, table_name, op, old, needs_dispatch)
          SELECT b, ws, logical, op, to_jsonb(o_.*), flagged FROM wds_old_rows o_;
      END IF;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n > 0 THEN
        -- Signed: any session can NOTIFY on any channel, only this function knows the key (realtime checks it).
        SELECT k.key INTO mac_key FROM platform.row_capture_key k LIMIT 1;
        -- With its time (unix seconds): a genuine notification replayed later is refused by it.
        sent := floor(extract(epoch FROM clock_timestamp()))::bigint::text;
        PERFORM pg_notify('wds_row_changes', ws::text || ':' || b::text || ':' || sent || ':' ||
          left(encode(sha256(convert_to(coalesce(mac_key, '') || ':' || ws::text || ':' || b::text || ':' || sent, 'UTF8')), 'hex'), 32));
      END IF;
      RETURN NULL;
    END
    $fn$;

    -- The function's owner is wds_row_capture. 0016 could not make it so where the service is no superuser (a new
    -- owner needs CREATE on the function's schema): it then kept the service's rights. Here it is given, and taken
    -- back once the function has moved.
    -- On its own: whatever happens below, the function can read the key it signs with.
    DO $$
    BEGIN
      GRANT SELECT ON platform.row_capture_key TO wds_row_capture;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'row capture key not granted to wds_row_capture: %', SQLERRM;
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
      IF (SELECT p.proowner::regrole::text FROM pg_catalog.pg_proc p WHERE p.oid = 'user_data.wds_capture_rows()'::regprocedure) <> 'wds_row_capture' THEN
        GRANT CREATE ON SCHEMA user_data TO wds_row_capture;
        ALTER FUNCTION user_data.wds_capture_rows() OWNER TO wds_row_capture;
        REVOKE CREATE ON SCHEMA user_data FROM wds_row_capture;
      END IF;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'row capture keeps the service role as its owner: %', SQLERRM;
    END
    $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The function stays as hardened (0016's down drops it), and so does the key it reads: dropping the key would fail
  // every captured write.
  await sql`
    ALTER TABLE platform.row_changes ALTER COLUMN created_at SET DEFAULT now();
  `.execute(db);
}
