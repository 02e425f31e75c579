/**
 * Liveness of workflow runs. A run is written when it starts, owned by the process that executes it (`owner`: that
 * process's instance id); while it runs, the process marks all its running runs alive in one statement every
 * interval (`heartbeat_at`, with the steps finished so far). A sweep, on a schedule in every process that runs
 * background work, fails the running runs whose heartbeat is older than a threshold: whoever ran them is gone. The
 * beat also reads back which of them were asked to stop (`cancel_requested_at`, set by any process) and tells them.
 */
import { randomUUID } from 'node:crypto';
import { type Db, sql } from '@wds/db';
import type { StepRecord } from './engine.js';

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
  /** Run id → the engine's step records so far, and what to do when a cancel was asked. */
  readonly #live = new Map<string, { steps: StepRecord[]; onCancel: (() => void) | undefined }>();
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;

  constructor(opts: RunHeartbeatOptions) {
    if (!(opts.intervalMs >= 1)) throw new RangeError('RunHeartbeat: intervalMs at least 1');
    this.#db = opts.db;
    this.#intervalMs = opts.intervalMs;
    this.#onError = opts.onError ?? (() => {});
  }

  /** Beats for the run (and records `steps` as they grow) until `untrack`; `onCancel` when a beat finds it cancelled. */
  track(runId: string, steps: StepRecord[], onCancel?: () => void): void {
    this.#live.set(runId, { steps, onCancel });
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
    const runs = [...this.#live].map(([id, { steps }]) => ({ id, steps }));
    this.#inFlight = sql<{ id: string }>`
      UPDATE platform.workflow_runs r SET heartbeat_at = now(), steps = v.steps
        FROM jsonb_to_recordset(${JSON.stringify(runs)}::jsonb) AS v(id uuid, steps jsonb)
       WHERE r.id = v.id AND r.status = 'running'
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

/**
 * Fails every running run whose heartbeat (or, for a run recorded before heartbeats, its start) is older than
 * `staleAfterMs`: status `failed`, error `{ step: 'run', kind: 'interrupted', message }` (which step was under way
 * is not known); the steps it recorded stay. Returns how many. Safe in every process at once.
 */
export async function sweepInterruptedRuns(db: Db, opts: { staleAfterMs: number }): Promise<number> {
  const ms = Math.max(0, Math.floor(opts.staleAfterMs));
  const { rows } = await sql<{ id: string }>`
    UPDATE platform.workflow_runs
       SET status = 'failed',
           error = jsonb_build_object(
             'step', 'run', 'kind', 'interrupted',
             'message', 'interrupted: the process running it stopped (no heartbeat since '
               || to_char(coalesce(heartbeat_at, started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ')'),
           finished_at = now(),
           duration_ms = extract(epoch FROM now() - started_at) * 1000
     WHERE status = 'running'
       AND coalesce(heartbeat_at, started_at) < now() - ${ms} * interval '1 millisecond'
    RETURNING id`.execute(db);
  return rows.length;
}
