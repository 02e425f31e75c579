import { type Kysely, sql } from 'kysely';

/**
 * The in-transaction audit function of 0022 (`user_data.wds_audit`), hardened (issue 29, point 1, review):
 *
 * - **Its owner** is `wds_audit_writer` where the service is no superuser too. 0022 moved it there in one block
 *   that fails on such a server (a new owner needs CREATE on the function's schema), which rolled back the role's
 *   grants with it and left a SECURITY DEFINER function with every right of the service, callable by every workspace
 *   role. As 0017 did for row capture: the grants stand alone, CREATE on `user_data` is lent for the move and taken
 *   back.
 * - **Bound to its session.** The service's call is visible while it runs to every session of the same workspace
 *   role (`pg_stat_activity.query`), so a raw session of that role could replay a signed entry seen there — say one
 *   whose transaction then rolled back (a deferred constraint failing at COMMIT), leaving an entry without its write.
 *   An entry now names the backend it was made for (`pid`, the service's connection's `processID`), and is written
 *   only there: on that connection only the service's statements and analysed user SQL run, which cannot name the
 *   function.
 * - **Only SQL statements' entries** (`execute_sql_<kind>` on `table`): even the key cannot make it write anything else.
 * - **Its refusals** are SQLSTATE `WDS03`, so the service tells them (its own fault: 503, the statement rolled back)
 *   from the user's errors.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Each on its own: whatever fails below, the function's role has what it writes with.
    DO $$
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'wds_audit_writer') THEN
        CREATE ROLE wds_audit_writer NOLOGIN NOINHERIT;
      END IF;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'role wds_audit_writer not created: %', SQLERRM;
    END
    $$;
    DO $$
    BEGIN
      IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = CURRENT_USER) THEN
        EXECUTE 'GRANT wds_audit_writer TO ' || quote_ident(CURRENT_USER);
      END IF;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'wds_audit_writer not granted to the service: %', SQLERRM;
    END
    $$;
    DO $$
    BEGIN
      GRANT USAGE ON SCHEMA platform TO wds_audit_writer;
      GRANT SELECT ON platform.audit_key TO wds_audit_writer;
      GRANT INSERT ON platform.audit_logs TO wds_audit_writer;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'wds_audit_writer not granted the audit log: %', SQLERRM;
    END
    $$;

    CREATE OR REPLACE FUNCTION user_data.wds_audit(entry text, mac text) RETURNS void
      LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
      k text;
      e jsonb;
      ws uuid;
    BEGIN
      SELECT a.key INTO k FROM platform.audit_key a LIMIT 1;
      IF k IS NULL OR entry IS NULL OR mac IS NULL
         OR mac <> pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(k || ':' || entry, 'UTF8')), 'hex') THEN
        RAISE EXCEPTION 'this audit entry was not made by the service' USING ERRCODE = 'WDS03';
      END IF;
      e := entry::jsonb;
      ws := (e ->> 'workspace_id')::uuid;
      IF ws IS NULL OR session_user::text <> 'wds_ws_' || pg_catalog.replace(ws::text, '-', '') THEN
        RAISE EXCEPTION 'an audit entry of another workspace' USING ERRCODE = 'WDS03';
      END IF;
      -- Compared as text: no cast that could fail on a number out of range.
      IF (e ->> 'pid') IS NULL OR (e ->> 'pid') <> pg_catalog.pg_backend_pid()::text THEN
        RAISE EXCEPTION 'an audit entry made for another session' USING ERRCODE = 'WDS03';
      END IF;
      IF (e ->> 'action') IS NULL OR (e ->> 'action') !~ '^execute_sql_[a-z]+$' OR (e ->> 'resource_type') IS DISTINCT FROM 'table' THEN
        RAISE EXCEPTION 'an audit entry of something else than a SQL statement' USING ERRCODE = 'WDS03';
      END IF;
      INSERT INTO platform.audit_logs (id, workspace_id, user_id, api_key_id, action, resource_type, resource_id, details, request_id, transport)
      VALUES ((e ->> 'id')::uuid, ws, (e ->> 'user_id')::uuid, (e ->> 'api_key_id')::uuid, e ->> 'action', e ->> 'resource_type',
              e ->> 'resource_id', COALESCE(e -> 'details', '{}'::jsonb), e ->> 'request_id', e ->> 'transport');
    END
    $fn$;
    REVOKE ALL ON FUNCTION user_data.wds_audit(text, text) FROM PUBLIC;
    -- Workspace roles call it in their writes' transactions; without the service's MAC it writes nothing.
    GRANT EXECUTE ON FUNCTION user_data.wds_audit(text, text) TO PUBLIC;

    DO $$
    BEGIN
      IF (SELECT p.proowner::regrole::text FROM pg_catalog.pg_proc p WHERE p.oid = 'user_data.wds_audit(text, text)'::regprocedure) <> 'wds_audit_writer' THEN
        GRANT CREATE ON SCHEMA user_data TO wds_audit_writer;
        ALTER FUNCTION user_data.wds_audit(text, text) OWNER TO wds_audit_writer;
        REVOKE CREATE ON SCHEMA user_data FROM wds_audit_writer;
      END IF;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'the audit function keeps the service role as its owner: %', SQLERRM;
    END
    $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // 0022's function again (unbound, its refusals 42501); the owner and the grants stay as they are.
  await sql`
    CREATE OR REPLACE FUNCTION user_data.wds_audit(entry text, mac text) RETURNS void
      LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
      k text;
      e jsonb;
      ws uuid;
    BEGIN
      SELECT a.key INTO k FROM platform.audit_key a LIMIT 1;
      IF k IS NULL OR entry IS NULL OR mac IS NULL
         OR mac <> pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(k || ':' || entry, 'UTF8')), 'hex') THEN
        RAISE EXCEPTION 'this audit entry was not made by the service' USING ERRCODE = '42501';
      END IF;
      e := entry::jsonb;
      ws := (e ->> 'workspace_id')::uuid;
      IF ws IS NULL OR session_user::text <> 'wds_ws_' || pg_catalog.replace(ws::text, '-', '') THEN
        RAISE EXCEPTION 'an audit entry of another workspace' USING ERRCODE = '42501';
      END IF;
      INSERT INTO platform.audit_logs (id, workspace_id, user_id, api_key_id, action, resource_type, resource_id, details, request_id, transport)
      VALUES ((e ->> 'id')::uuid, ws, (e ->> 'user_id')::uuid, (e ->> 'api_key_id')::uuid, e ->> 'action', e ->> 'resource_type',
              e ->> 'resource_id', COALESCE(e -> 'details', '{}'::jsonb), e ->> 'request_id', e ->> 'transport');
    END
    $fn$;
  `.execute(db);
}
