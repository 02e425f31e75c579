import { type Kysely, sql } from 'kysely';

/**
 * The second wall, tightened:
 * - wds_row_check is VOLATILE, so PostgreSQL never folds a constant check at plan time (an always-false filter
 *   would otherwise deny a statement that touches no row);
 * - workspace roles cannot create functions (no USAGE on the trusted languages), so nothing a workspace defines can
 *   shadow a built-in, serve as a cast, trigger or policy, and run with someone else's rights. Only a superuser may
 *   change a language's privileges; on a managed database where the service is not one this step is skipped and the
 *   rewriter plus `search_path = pg_catalog` stay the walls (docs/sql-and-policies.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER FUNCTION user_data.wds_row_check(boolean, text) VOLATILE;
    DO $$
    BEGIN
      IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        REVOKE USAGE ON LANGUAGE sql, plpgsql FROM PUBLIC;
      END IF;
    END
    $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER FUNCTION user_data.wds_row_check(boolean, text) IMMUTABLE;
    DO $$
    BEGIN
      IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        GRANT USAGE ON LANGUAGE sql, plpgsql TO PUBLIC;
      END IF;
    END
    $$;
  `.execute(db);
}
