import { type Kysely, sql } from 'kysely';

/**
 * Run step data (issue 31): what each step of a recorded run was given and what it made, so a run can be debugged
 * and run again with the same `$input`.
 * - `step_data`: one entry per step record, `{ kind, index, input?, output? }` (@wds/workflows step-data.ts), each
 *   value with secrets masked and capped at WORKFLOW_STEP_DATA_MAX_BYTES (a truncation marker beyond). Kept apart
 *   from `steps`, which run lists answer: a list never reads the data (each value up to the cap, a run's steps many).
 *   Null for runs recorded before 0026 and while nothing is kept (a cap of 0).
 * - `rerun_of`: the run a rerun repeats (no foreign key: the record says where it came from, even once that run is
 *   gone). A rerun of a row trigger's run carries the rows its owner's policy chose as `$input`: like the row run,
 *   it is whole only for the user it ran as.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_runs
      ADD COLUMN step_data jsonb,
      ADD COLUMN rerun_of uuid;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_runs DROP COLUMN step_data, DROP COLUMN rerun_of;
  `.execute(db);
}
