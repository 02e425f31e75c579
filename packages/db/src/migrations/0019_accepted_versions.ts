import { type Kysely, sql } from 'kysely';

/**
 * The versions automation runs (issue 28): a workflow keeps `accepted_versions`, the version each unpinned step ran
 * when the workflow was last saved — `{ stf: { <referenced version id>: <version id> }, effect: { … }, definition:
 * <digest> }` — and its schedules, hooks and triggers run those, never a version another editor added since (saving
 * it again accepts the newest, and whoever does so takes its automation over). An async run keeps the same for the
 * moment it was asked for (`workflow_runs.accepted_versions`). Existing workflows run what they ran before: those
 * with a row trigger the versions they name (an empty map, as row triggers ran), the others the newest as of now.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflows ADD COLUMN accepted_versions jsonb;
    ALTER TABLE platform.workflow_runs ADD COLUMN accepted_versions jsonb;

    CREATE FUNCTION pg_temp.newest_of(def jsonb) RETURNS jsonb LANGUAGE sql AS $f$
      SELECT jsonb_build_object(
        'stf', coalesce((
          SELECT jsonb_object_agg(r.id::text, n.id::text)
          FROM jsonb_array_elements(coalesce(def->'stf_steps', '[]')) s
          JOIN platform.stf_versions r ON r.id::text = s->>'stf_version_id'
          JOIN LATERAL (SELECT v.id FROM platform.stf_versions v WHERE v.stf_id = r.stf_id ORDER BY v.id DESC LIMIT 1) n ON true
          WHERE coalesce(s->>'pin_version', 'false') <> 'true'), '{}'),
        'effect', coalesce((
          SELECT jsonb_object_agg(r.id::text, n.id::text)
          FROM jsonb_array_elements(coalesce(def->'effect_steps', '[]')) s
          JOIN platform.effect_versions r ON r.id::text = s->>'effect_version_id'
          JOIN LATERAL (SELECT v.id FROM platform.effect_versions v WHERE v.effect_id = r.effect_id ORDER BY v.id DESC LIMIT 1) n ON true
          WHERE coalesce(s->>'pin_version', 'false') <> 'true'), '{}'))
    $f$;

    UPDATE platform.workflows w SET accepted_versions = CASE
      WHEN EXISTS (SELECT 1 FROM platform.workflow_triggers t WHERE t.workflow_id = w.id AND t.event IN ('row_inserted', 'row_updated', 'row_deleted'))
        THEN '{"stf": {}, "effect": {}}'::jsonb
      ELSE pg_temp.newest_of(w.definition) END;
    DROP FUNCTION pg_temp.newest_of(jsonb);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflows DROP COLUMN accepted_versions;
    ALTER TABLE platform.workflow_runs DROP COLUMN accepted_versions;
  `.execute(db);
}
