/**
 * Liveness of workflow runs. A run is written when it starts, owned by the process that executes it (`owner`: that
 * process's instance id); while it runs, the process marks all its running runs alive in one statement every
 * interval (`heartbeat_at`, with the steps finished so far). A sweep, on a schedule in every process that runs
 * background work, settles the running runs whose heartbeat is older than a threshold — whoever ran them is gone: a
 * queued kind's run (async, schedule, webhook, event) goes back to `queued` for its next attempt, which resumes it
 * (issue 29), until it has had `maxAttempts`; a waiting run, and one out of attempts, fails as interrupted; one asked
 * to stop ends cancelled. The beat also reads back which of them were asked to stop (`cancel_requested_at`, set by
 * any process) and tells them.
 */
import { randomUUID } from 'node:crypto';
import { auditInsertSelect } from '@wds/audit';
import { type Db, sql } from '@wds/db';
import type { StepRecord } from './engine.js';
import { boundedStepData, splitStepData } from './step-data.js';

/** This process's id as the owner of the runs it executes; a new one at every start. */
export const INSTANCE_ID: string = randomUUID();

export interface RunHeartbeatOptions {
  db: Db;
  /** How often the runs of this process are marked alive. */
  intervalMs: number;
  /** A beat failed (the database was away); the next one tries again. */
  onError?: (err: Error) => void;
}

/** Keeps this process's running runs alive in the database: one timer, one statement per beat for all of them. */
export class RunHeartbeat {
  readonly owner = INSTANCE_ID;
  readonly #db: Db;
  readonly #intervalMs: number;
  readonly #onError: (err: Error) => void;
  /** Run id → the engine's step records so far, what to do when a cancel was asked, and which attempt of it runs here. */
  readonly #live = new Map<string, { steps: StepRecord[]; onCancel: (() => void) | undefined; attempt: number | undefined }>();
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;

  constructor(opts: RunHeartbeatOptions) {
    if (!(opts.intervalMs >= 1)) throw new RangeError('RunHeartbeat: intervalMs at least 1');
    this.#db = opts.db;
    this.#intervalMs = opts.intervalMs;
    this.#onError = opts.onError ?? (() => {});
  }

  /**
   * Beats for the run (and records `steps` as they grow) until `untrack`; `onCancel` when a beat finds it cancelled.
   * With `attempt`, only while the run is at that attempt (a later one, elsewhere, is not kept alive by this one).
   */
  track(runId: string, steps: StepRecord[], onCancel?: () => void, attempt?: number): void {
    this.#live.set(runId, { steps, onCancel, attempt });
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.beat(), this.#intervalMs);
    this.#timer.unref(); // a run in progress keeps the process up, not its heartbeat
  }

  untrack(runId: string): void {
    this.#live.delete(runId);
    if (this.#live.size > 0 || !this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Marks every tracked run alive now; a beat still under way is joined rather than doubled. */
  beat(): Promise<void> {
    if (this.#inFlight) return this.#inFlight;
    if (this.#live.size === 0) return Promise.resolve();
    // Each step's input and output go to step_data, apart from the records run lists answer (step-data.ts).
    const runs = [...this.#live].map(([id, { steps, attempt }]) => {
      const split = splitStepData(steps);
      return { id, steps: split.steps, step_data: boundedStepData(split.data)?.data ?? null, attempt: attempt ?? null };
    });
    this.#inFlight = sql<{ id: string }>`
      UPDATE platform.workflow_runs r SET heartbeat_at = now(), steps = v.steps, step_data = v.step_data
        FROM jsonb_to_recordset(${JSON.stringify(runs)}::jsonb) AS v(id uuid, steps jsonb, step_data jsonb, attempt integer)
       WHERE r.id = v.id AND r.status = 'running' AND (v.attempt IS NULL OR r.attempts = v.attempt)
      RETURNING r.id, r.cancel_requested_at IS NOT NULL AS cancel`
      .execute(this.#db)
      .then(
        ({ rows }) => {
          for (const row of rows as { id: string; cancel: boolean }[]) if (row.cancel) this.#live.get(row.id)?.onCancel?.();
        },
        (err: Error) => this.#onError(err),
      )
      .finally(() => {
        this.#inFlight = undefined;
      });
    return this.#inFlight;
  }
}

export interface InterruptedRuns {
  /** Back to `queued`, for their next attempt (the caller queues them: resumeInterruptedRuns in queued.ts). */
  resumed: string[];
  /** Failed as interrupted: waiting runs, and queued kinds out of attempts. */
  failed: number;
  /** Asked to stop before their process died: ended cancelled. */
  cancelled: number;
}

/**
 * Settles every running run whose heartbeat (or, for a run recorded before heartbeats, its start) is older than
 * `staleAfterMs` — its process is gone:
 * - asked to stop meanwhile: `cancelled` (`kind: "cancelled"`);
 * - a queued kind's (trigger not `request`) with fewer than `maxAttempts` attempts: `queued` again, its steps and
 *   checkpoint kept, for its next attempt to resume (the steps it finished are not run again);
 * - otherwise `failed`, error `{ step: 'run', kind: 'interrupted', message }` (which step was under way is not
 *   known); the steps it recorded stay.
 * A waiting run (`request`) it ends gets its `execute_workflow` audit entry here (`interrupted: true`), in the same
 * statement: its process died before writing the one that comes with a run's end.
 * `maxAttempts` 1 (the default) resumes nothing. Safe in every process at once (the rows are locked, SKIP LOCKED).
 */
export async function settleInterruptedRuns(db: Db, opts: { staleAfterMs: number; maxAttempts?: number }): Promise<InterruptedRuns> {
  const ms = Math.max(0, Math.floor(opts.staleAfterMs));
  const max = Math.max(1, Math.floor(opts.maxAttempts ?? 1));
  const { rows } = await sql<{ id: string; status: string }>`
    WITH stale AS (
      SELECT id, coalesce(heartbeat_at, started_at) AS beat, coalesce(attempts, 1) AS attempts,
             CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled'
                  WHEN trigger <> 'request' AND coalesce(attempts, 1) < ${max} THEN 'queued'
                  ELSE 'failed' END AS verdict
        FROM platform.workflow_runs
       WHERE status = 'running'
         AND coalesce(heartbeat_at, started_at) < now() - ${ms} * interval '1 millisecond'
       FOR UPDATE SKIP LOCKED),
    settled AS (
      UPDATE platform.workflow_runs r
         SET status = s.verdict,
             error = CASE s.verdict
               WHEN 'queued' THEN NULL
               WHEN 'cancelled' THEN jsonb_build_object('step', 'run', 'kind', 'cancelled',
                 'message', 'Cancelled: its process stopped before the run ended; the steps that had not started were skipped')
               ELSE jsonb_build_object('step', 'run', 'kind', 'interrupted',
                 'message', 'interrupted: the process running it stopped (no heartbeat since '
                   || to_char(s.beat AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ')'
                   || CASE WHEN r.trigger <> 'request' AND ${max} > 1
                        THEN '; attempt ' || s.attempts || ' of at most ' || ${max} || ' (RUN_MAX_ATTEMPTS): not resumed again' ELSE '' END)
               END,
             finished_at = CASE WHEN s.verdict = 'queued' THEN NULL ELSE now() END,
             duration_ms = CASE WHEN s.verdict = 'queued' THEN NULL ELSE extract(epoch FROM now() - r.started_at) * 1000 END,
             owner = CASE WHEN s.verdict = 'queued' THEN NULL ELSE r.owner END,
             heartbeat_at = CASE WHEN s.verdict = 'queued' THEN NULL ELSE r.heartbeat_at END,
             checkpoint = CASE WHEN s.verdict = 'queued' THEN r.checkpoint ELSE NULL END
        FROM stale s
       WHERE r.id = s.id
      RETURNING r.id, r.status, r.trigger, r.workspace_id, r.workflow_id, r.executed_by),
    -- A waiting run's entry comes with its end (finishRun), which its process did not live to write: written here,
    -- so that what its STF steps committed is never without its run's entry. (Queued kinds have theirs from when
    -- they were queued.)
    entries AS (${auditInsertSelect(sql`
      SELECT user_data.uuidv7(), s.workspace_id, s.executed_by, NULL::uuid, 'execute_workflow', 'workflow', s.workflow_id::text,
             jsonb_build_object('run_id', s.id, 'status', s.status, 'interrupted', true)
               || CASE WHEN s.status = 'failed' THEN jsonb_build_object('failed_step', 'run') ELSE '{}'::jsonb END,
             NULL::text, NULL::text
        FROM settled s
       WHERE s.trigger = 'request' AND s.status IN ('failed', 'cancelled')`)})
    SELECT id, status FROM settled`.execute(db);
  return {
    resumed: rows.filter((r) => r.status === 'queued').map((r) => r.id),
    failed: rows.filter((r) => r.status === 'failed').length,
    cancelled: rows.filter((r) => r.status === 'cancelled').length,
  };
}

/** settleInterruptedRuns without resuming anything (maxAttempts 1 unless given): how many runs it settled. */
export async function sweepInterruptedRuns(db: Db, opts: { staleAfterMs: number; maxAttempts?: number }): Promise<number> {
  const r = await settleInterruptedRuns(db, opts);
  return r.resumed.length + r.failed + r.cancelled;
}
