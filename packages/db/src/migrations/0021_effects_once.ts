import { type Kysely, sql } from 'kysely';

/**
 * Effects once across crashes (issue 29, point 2). A queued run cut by a crash is resumed in place, under the same id,
 * instead of failing as interrupted (liveness.ts), and the steps it had finished are not run again:
 * - `attempts`: how many times a process took the run up (null for runs recorded before 0021: they ran once). The
 *   sweep resumes a queued kind's run at most RUN_MAX_ATTEMPTS times, then fails it; each attempt fences its writes
 *   with its number, so an attempt that was only slow never overwrites the one that replaced it.
 * - `origin`: what the run is the delivery of — `event:<event id>`, `schedule:<schedule id>@<tick>`,
 *   `webhook:<hook id>:<delivery key>`, `async:<run id>`, `request:<run id>` (null before 0021: `run:<id>`). Each
 *   effect's Idempotency-Key is derived from it (@wds/workflows keys.ts), so a retry re-sends with the same key.
 * - `checkpoint`: the outputs of the finished steps of a run in progress (never shown; cleared when the run ends).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_runs
      ADD COLUMN attempts integer CHECK (attempts >= 0),
      ADD COLUMN origin text,
      ADD COLUMN checkpoint jsonb;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.workflow_runs DROP COLUMN attempts, DROP COLUMN origin, DROP COLUMN checkpoint;
  `.execute(db);
}
