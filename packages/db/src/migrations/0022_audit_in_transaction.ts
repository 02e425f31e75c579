import { type Kysely, sql } from 'kysely';

/**
 * A write and its audit entry commit together (issue 29). User SQL runs on a connection logged in as the
 * workspace's own role, which has no right on `platform`; the entry of a write is written in the write's own
 * transaction through `user_data.wds_audit(entry, mac)`, just before its COMMIT, so a crash between the two can no
 * longer leave a committed write without its entry.
 *
 * - The function is SECURITY DEFINER, owned by `wds_audit_writer`, a NOLOGIN role that may only read the key and
 *   insert audit entries (the service's own role where it cannot create one, as row capture does in 0016).
 * - It trusts nothing the session controls: `search_path` is `pg_catalog, pg_temp`, every relation is qualified.
 * - It writes an entry only with the MAC the service made: the first 64 hex digits of
 *   `sha256(<key>:<entry text>)`, the key in `platform.audit_key`, which only the service and that role read. A
 *   workspace session can call the function (it must, in the write's transaction) but cannot make a MAC.
 * - Only for the calling session's own workspace: the entry's `workspace_id` must be the one of the role the session
 *   logged in as (`session_user`, `wds_ws_<hex>`), so an entry seen once cannot be written into another workspace;
 *   the entry's `id` is its primary key, so it cannot be written twice.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.audit_key (key text NOT NULL);
    INSERT INTO platform.audit_key (key) VALUES (replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
    REVOKE ALL ON platform.audit_key FROM PUBLIC;

    CREATE FUNCTION user_data.wds_audit(entry text, mac text) RETURNS void
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
    REVOKE ALL ON FUNCTION user_data.wds_audit(text, text) FROM PUBLIC;

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
      GRANT USAGE ON SCHEMA platform TO wds_audit_writer;
      GRANT SELECT ON platform.audit_key TO wds_audit_writer;
      GRANT INSERT ON platform.audit_logs TO wds_audit_writer;
      ALTER FUNCTION user_data.wds_audit(text, text) OWNER TO wds_audit_writer;
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'audit entries in the write''s transaction keep the service role as their owner: %', SQLERRM;
    END
    $$;
    -- Workspace roles call it in their writes' transactions; without the service's MAC it writes nothing.
    GRANT EXECUTE ON FUNCTION user_data.wds_audit(text, text) TO PUBLIC;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP FUNCTION user_data.wds_audit(text, text);
    DROP TABLE platform.audit_key;
    DO $$
    BEGIN
      IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'wds_audit_writer') THEN
        REVOKE ALL ON SCHEMA platform FROM wds_audit_writer;
        REVOKE ALL ON platform.audit_logs FROM wds_audit_writer;
      END IF;
    END
    $$;
  `.execute(db);
}
