import { type Kysely, sql } from 'kysely';

/**
 * The versions an automation runs (issue 28): each schedule, hook and event trigger keeps `accepted_versions`, the
 * version each unpinned step of its workflow ran when its owner last accepted it (created or changed it, or saved
 * the workflow) — `{ stf: { <referenced version id>: <version id> }, effect: { … }, definition: <digest> }` — and
 * runs those, never a version another editor added since. An async run keeps the same for the moment it was asked
 * for (`workflow_runs.accepted_versions`). Existing rows run what they ran before: schedules, hooks and file or
 * document triggers the newest version as of now, row triggers the version their workflow names (an empty map).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_schedules ADD COLUMN accepted_versions jsonb;
    ALTER TABLE platform.workflow_hooks ADD COLUMN accepted_versions jsonb;
    ALTER TABLE platform.workflow_triggers ADD COLUMN accepted_versions jsonb;
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

    UPDATE platform.workflow_schedules a SET accepted_versions = pg_temp.newest_of(w.definition) FROM platform.workflows w WHERE w.id = a.workflow_id;
    UPDATE platform.workflow_hooks a SET accepted_versions = pg_temp.newest_of(w.definition) FROM platform.workflows w WHERE w.id = a.workflow_id;
    UPDATE platform.workflow_triggers a SET accepted_versions = pg_temp.newest_of(w.definition) FROM platform.workflows w
      WHERE w.id = a.workflow_id AND a.event NOT IN ('row_inserted', 'row_updated', 'row_deleted');
    UPDATE platform.workflow_triggers SET accepted_versions = '{"stf": {}, "effect": {}}'
      WHERE event IN ('row_inserted', 'row_updated', 'row_deleted');
    DROP FUNCTION pg_temp.newest_of(jsonb);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_schedules DROP COLUMN accepted_versions;
    ALTER TABLE platform.workflow_hooks DROP COLUMN accepted_versions;
    ALTER TABLE platform.workflow_triggers DROP COLUMN accepted_versions;
    ALTER TABLE platform.workflow_runs DROP COLUMN accepted_versions;
  `.execute(db);
}
