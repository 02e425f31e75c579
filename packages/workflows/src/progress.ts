/**
 * A run's progress, stored as its steps end (issue 29): `steps` (what the run view shows) and, for a run the queue
 * resumes after a crash, `checkpoint` — the outputs of the steps it finished (RunProgress) with a digest of the steps
 * they were made by. A resumed attempt reuses them instead of running those steps again. The checkpoint holds what
 * the steps read and made (rows included): it is never shown, and is cleared when the run ends. Each write is fenced
 * by the attempt: an attempt that was only slow (its process alive but its heartbeat stale) never overwrites the
 * progress of the attempt that replaced it.
 */
import { type Db, sql } from '@wds/db';
import type { RunProgress, StepRecord } from './engine.js';
import { boundedStepData, splitStepData } from './step-data.js';

/** A checkpoint larger than this keeps only the effects delivered: a resumed attempt runs the other steps again. */
export const CHECKPOINT_MAX_BYTES = 16 * 1024 * 1024;

interface StoredCheckpoint extends RunProgress {
  /** definitionDigest of the steps (as bound to their versions) that made it. */
  definition: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isRecord = (v: unknown): v is StepRecord => isObject(v) && typeof v.kind === 'string' && typeof v.index === 'number' && typeof v.status === 'string';

/** The progress a stored checkpoint holds for steps of digest `definition`; undefined when none, or of other steps. */
export function storedProgress(stored: unknown, definition: string): RunProgress | undefined {
  if (!isObject(stored) || stored.definition !== definition) return undefined;
  const stf = Array.isArray(stored.stf) ? stored.stf.filter((s): s is RunProgress['stf'][number] => isObject(s) && isRecord(s.record) && 'output' in s) : [];
  const effects = Array.isArray(stored.effects) ? stored.effects.filter(isRecord) : [];
  const input = stored.input;
  const progress: RunProgress = { stf, effects };
  if (isObject(input) && Array.isArray(input.records) && input.records.every(isRecord) && isObject(input.sources)) {
    progress.input = { records: input.records, sources: input.sources };
  }
  return progress;
}

/** The checkpoint to store: whole, or past CHECKPOINT_MAX_BYTES only its delivered effects. */
function checkpointText(progress: RunProgress, definition: string): string {
  const whole = JSON.stringify({ definition, ...progress } satisfies StoredCheckpoint);
  if (whole.length <= CHECKPOINT_MAX_BYTES) return whole;
  return JSON.stringify({ definition, stf: [], effects: progress.effects } satisfies StoredCheckpoint);
}

/**
 * Writes a run's progress as its steps end, one write at a time (effects end in parallel), each carrying the latest.
 * `checkpoint: false` (a run nothing resumes: a waiting one) records only `steps`, and only as its effects end —
 * so its view says which effects were delivered even when its process dies next.
 */
export class ProgressWriter {
  readonly #db: Db;
  readonly #runId: string;
  readonly #attempt: number;
  readonly #definition: string;
  readonly #steps: StepRecord[];
  readonly #checkpoint: boolean;
  readonly #onError: (err: Error) => void;
  #chain: Promise<void> = Promise.resolve();
  #effectsWritten = 0;

  constructor(opts: {
    db: Db;
    runId: string;
    attempt: number;
    definition: string;
    /** The engine's step records (the array it appends to). */
    steps: StepRecord[];
    checkpoint: boolean;
    onError: (err: Error) => void;
  }) {
    this.#db = opts.db;
    this.#runId = opts.runId;
    this.#attempt = opts.attempt;
    this.#definition = opts.definition;
    this.#steps = opts.steps;
    this.#checkpoint = opts.checkpoint;
    this.#onError = opts.onError;
  }

  /** Records the progress now (after the writes before it); never rejects (a failed write is reported, not thrown). */
  readonly write = (progress: RunProgress): Promise<void> => {
    const effects = this.#steps.filter((s) => s.kind === 'effect').length;
    if (!this.#checkpoint && effects === this.#effectsWritten) return this.#chain;
    this.#effectsWritten = effects;
    // The steps' input and output go to step_data, apart from the records run lists answer (step-data.ts).
    const split = splitStepData(this.#steps);
    const steps = JSON.stringify(split.steps);
    const stepData = boundedStepData(split.data)?.text ?? null;
    const checkpoint = this.#checkpoint ? checkpointText(progress, this.#definition) : undefined;
    this.#chain = this.#chain.then(() =>
      this.#db
        .updateTable('platform.workflow_runs')
        .set({ steps, step_data: stepData, heartbeat_at: sql<Date>`now()`, ...(checkpoint !== undefined ? { checkpoint } : {}) })
        .where('id', '=', this.#runId)
        .where('status', '=', 'running')
        .where('attempts', '=', this.#attempt)
        .execute()
        .then(
          () => undefined,
          (err: Error) => this.#onError(err),
        ),
    );
    return this.#chain;
  };
}
