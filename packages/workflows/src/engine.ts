/**
 * Executes a workflow (docs/workflows.md#definition): input steps in parallel, then STF steps in order, then effect
 * steps in parallel. The result is the last STF step's output (`$input` when there is none). The engine knows nothing
 * of HTTP, databases or runtimes: the caller hands it the resolved step versions and the functions that run a step.
 *
 * Failure rules: a failing input step fails the run before any STF runs; a failing STF step stops the run (later
 * STF and all effect steps are skipped); effect steps all run, and any failure among them (a transport error, or
 * an HTTP status of 400 or more after its retries) fails the run too. Every step gets a record; what its definition
 * wrote in an older form that still works (a legacy variable, a Library source naming a table, an effect mapping
 * read through `$.input.…`) is listed in the record's `deprecations` with what to write instead.
 *
 * Resuming (issue 29): the engine reports what it finished as it goes (`onProgress`: the input steps' values, each
 * STF step's output, each effect answered 2xx), and given what an earlier attempt of the same run finished
 * (`resume`), does not run those steps again: their records and outputs are reused, and only the step under way at
 * the crash runs again — an effect with the same Idempotency-Key (`effectKey`).
 *
 * Step data (issue 31): given a keeper (`stepData`), each record carries what its step was given and made, as the
 * keeper keeps them (step-data.ts: secrets masked, capped); a reused record keeps the data of the attempt that ran it.
 */
import { performance } from 'node:perf_hooks';
import { type EffectResult, type EffectSpec, effectInputAliases } from '@wds/effect-runner';
import type { RuntimeName } from '@wds/stf-runtime';
import type { InputStep, WorkflowDefinition } from './definition.js';
import { effectRequest, sourceInput, type StepDataKeeper } from './step-data.js';
import { buildStepInput, type Deprecation, legacyMappings, type Scope } from './variables.js';

export interface ResolvedStf {
  stf_id: string;
  stf_version_id: string;
  version: string;
  runtime: RuntimeName;
  code: Buffer;
  /** The STF's secrets as stored (sealed), loaded with the version so a step costs no extra query. */
  sealed_secrets: { env_key: string; sealed_value: Buffer }[];
}

export interface ResolvedEffect {
  effect_id: string;
  effect_version_id: string;
  version: string;
  spec: EffectSpec;
}

export interface StepError {
  kind: string;
  message: string;
  details?: string;
}

export type StfOutcome = { ok: true; output: unknown } | { ok: false; error: StepError };

export interface StepRunners {
  /**
   * `deprecated` records, with the step, a source written in a form that still works but has a newer spelling;
   * `readRows` says the source read a table with the policies of the user the run runs as (StepRecord.caller_rows).
   */
  loadSource(step: InputStep, deprecated: (d: Omit<Deprecation, 'at'>) => void, readRows?: () => void): Promise<unknown>;
  /** `signal`: the run's; aborted, the STF under way is stopped (its runtime's slot freed) and the step fails. */
  runStf(stf: ResolvedStf, input: unknown, sources: Record<string, unknown>, signal?: AbortSignal): Promise<StfOutcome>;
  /** Resolves with the response (any status) or rejects (an EffectError: refused, timeout, network, …). */
  runEffect(effect: ResolvedEffect, input: unknown, idempotencyKey: string): Promise<EffectResult>;
}

export type StepStatus = 'succeeded' | 'failed' | 'skipped';

export interface StepRecord {
  kind: 'input' | 'stf' | 'effect';
  index: number;
  name?: string;
  stf_id?: string;
  stf_version_id?: string;
  effect_id?: string;
  effect_version_id?: string;
  version?: string;
  status: StepStatus;
  duration_ms?: number;
  error?: StepError;
  /** Effects: the response's HTTP status, and how many attempts were made. */
  status_code?: number;
  attempts?: number;
  /**
   * Effects: the Idempotency-Key the call carried — the same in every attempt and every retry of the same delivery
   * (keys.ts) — and whether the endpoint answered 2xx (a resumed run does not call it again).
   */
  idempotency_key?: string;
  delivered?: boolean;
  /**
   * In a run resumed after a crash (its `attempts` over 1): the attempt of the run that ran this step. A step of an
   * earlier attempt was not run again; its record and output were reused.
   */
  attempt?: number;
  /** What this step's definition wrote in an older form that still works, and what to write instead. */
  deprecations?: Deprecation[];
  /**
   * An input step that read a table with the policies of the user the run ran as: the run (its output, its errors)
   * is then whole only for that user (@wds/workflows store: rowsHiddenFrom).
   */
  caller_rows?: true;
  /**
   * What the step was given and what it made, as the run keeps them (step-data.ts: secrets masked, each value capped;
   * absent when nothing is kept): an input step its source and value, an STF step its input and output, an effect
   * step the request it made and `{ status, body }` of the answer. On the record in memory only — a resumed attempt
   * reuses them with it —, stored apart from `steps` (`step_data`) and answered by the run view alone.
   */
  input?: unknown;
  output?: unknown;
}

/**
 * What a run finished, step by step, for a later attempt of it to reuse: the input steps' records and values (once
 * all of them succeeded), each STF step that succeeded with its output (a prefix of the STF steps), and the effect
 * steps answered 2xx.
 */
export interface RunProgress {
  input?: { records: StepRecord[]; sources: Record<string, unknown> };
  stf: { record: StepRecord; output: unknown }[];
  effects: StepRecord[];
}

/** `record` with its deprecations, when there are any. */
const noted = (record: StepRecord, deprecations: Deprecation[]): StepRecord => (deprecations.length > 0 ? { ...record, deprecations } : record);

/**
 * A step's `input` and `output` as `keep` keeps them (nothing without a keeper, or what it does not keep); `output`
 * only for a step that made one, `sent` the credentials it sent (masked in what it got back).
 */
function dataOf(keep: StepDataKeeper | undefined, input: unknown, output?: { value: unknown; sent?: readonly string[] | undefined }): Pick<StepRecord, 'input' | 'output'> {
  if (!keep) return {};
  const kept = { input: keep(input), output: output ? keep(output.value, output.sent) : undefined };
  return { ...(kept.input !== undefined ? { input: kept.input } : {}), ...(kept.output !== undefined ? { output: kept.output } : {}) };
}

export interface RunError extends StepError {
  /** Which step failed: `input_steps[0]`, `stf_steps[2]`, `effect_steps[1]`. */
  step: string;
}

export interface ExecutionResult {
  /** `cancelled`: a cancel was asked while it ran; the steps that had not started were skipped. */
  status: 'succeeded' | 'failed' | 'cancelled';
  output: unknown;
  error: RunError | null;
  steps: StepRecord[];
  duration_ms: number;
}

const ms = (from: number) => Math.round((performance.now() - from) * 1000) / 1000;

function errorOf(err: unknown): StepError {
  if (err && typeof err === 'object' && 'message' in err) {
    const e = err as { kind?: unknown; message: unknown; details?: unknown };
    return {
      kind: typeof e.kind === 'string' ? e.kind : 'error',
      message: String(e.message),
      ...(typeof e.details === 'string' ? { details: e.details } : {}),
    };
  }
  return { kind: 'error', message: String(err) };
}

/** Whether `resume`'s input steps are those of `steps` (same names, in order, all succeeded). */
const sameInputs = (resumed: RunProgress['input'], steps: InputStep[]): resumed is NonNullable<RunProgress['input']> =>
  resumed !== undefined &&
  resumed.records.length === steps.length &&
  steps.every((s, i) => resumed.records[i]?.name === s.name && resumed.records[i]?.status === 'succeeded');

export async function executeWorkflow(
  def: WorkflowDefinition,
  input: unknown,
  resolved: { stfs: (ResolvedStf | undefined)[]; effects: (ResolvedEffect | undefined)[] },
  runners: StepRunners,
  opts: {
    runId: string;
    /** The engine appends each step's record here as the step ends, so a caller can record progress meanwhile. */
    steps?: StepRecord[];
    /** Aborted: a cancel was asked. No step starts after it; a step under way ends by its own limits (but see `stop`). */
    signal?: AbortSignal;
    /**
     * Aborted: the caller waiting for the run went away (an MCP call cancelled or out of time, an HTTP client gone);
     * `signal` is aborted with it. The STF step under way is stopped too (its runtime frees its slot), and the run ends
     * `cancelled`.
     */
    stop?: AbortSignal;
    /** Each effect step's Idempotency-Key (keys.ts effectIdempotencyKey); default `<runId>:<index>`. */
    effectKey?: (index: number, effect: ResolvedEffect) => string;
    /** Which attempt of the run this is (1: the first); over 1, every step record says which attempt ran it. */
    attempt?: number;
    /** What earlier attempts of this run finished: not run again (an STF step only at the version it ran at). */
    resume?: RunProgress;
    /** Called (and awaited) after each step that adds to the progress, and after each effect step; must not throw. */
    onProgress?: (progress: RunProgress) => Promise<void>;
    /** What each step record keeps of the step's input and output (step-data.ts); without it, nothing. */
    stepData?: StepDataKeeper;
    /**
     * Called as each step ends (not the skipped ones): how many have ended, of how many the definition has
     * (progress notifications). Must not throw.
     */
    onStepEnd?: (done: number, total: number) => void;
  },
): Promise<ExecutionResult> {
  const started = performance.now();
  const steps: StepRecord[] = opts.steps ?? [];
  const scope: Scope = { input, sources: {}, steps: [] };
  const attempt = opts.attempt ?? 1;
  const progress: RunProgress = { stf: [], effects: [] };
  const report = () => (opts.onProgress ? opts.onProgress(progress).catch(() => undefined) : Promise.resolve());
  /** A record of this attempt (or, reused, of the attempt that ran it), stamped when the run was resumed. */
  const stamp = (record: StepRecord, ranIn = attempt): StepRecord => (attempt > 1 ? { ...record, attempt: record.attempt ?? ranIn } : record);
  const effectKey = opts.effectKey ?? ((index: number) => `${opts.runId}:${index}`);
  const keep = opts.stepData;
  let error: RunError | null = null;
  const totalSteps = def.input_steps.length + def.stf_steps.length + def.effect_steps.length;
  let ended = 0;
  const stepEnded = () => {
    ended++;
    try {
      opts.onStepEnd?.(ended, totalSteps);
    } catch {
      // the caller's concern
    }
  };
  const finish = (output: unknown): ExecutionResult => ({
    status: error ? 'failed' : 'succeeded',
    output,
    error,
    steps,
    duration_ms: ms(started),
  });
  const skipRest = (fromStf: number) => {
    def.stf_steps.slice(fromStf).forEach((s, j) => {
      const stf = resolved.stfs[fromStf + j];
      const record: StepRecord = { kind: 'stf', index: fromStf + j, stf_version_id: stf?.stf_version_id ?? s.stf_version_id, status: 'skipped' };
      steps.push(noted(record, legacyMappings(`stf_steps[${fromStf + j}]`, s.input_mappings)));
    });
    def.effect_steps.forEach((s, i) => {
      const record: StepRecord = { kind: 'effect', index: i, effect_version_id: resolved.effects[i]?.effect_version_id ?? s.effect_version_id, status: 'skipped' };
      steps.push(noted(record, legacyMappings(`effect_steps[${i}]`, s.input_mappings)));
    });
  };

  /** Cancelled before STF step `fromStf` (or the effects): the rest is skipped, and the run ends `cancelled`. */
  const cancelledBefore = (fromStf: number): ExecutionResult | undefined => {
    if (!opts.signal?.aborted) return undefined;
    error = { step: 'run', kind: 'cancelled', message: 'Cancelled: the steps that had not started were skipped' };
    skipRest(fromStf);
    return { ...finish(null), status: 'cancelled' };
  };

  // 1. Input steps, in parallel — or, all finished by an earlier attempt, their values as it recorded them.
  if (opts.signal?.aborted) {
    for (const [index, step] of def.input_steps.entries()) steps.push({ kind: 'input', index, name: step.name, status: 'skipped' });
    return cancelledBefore(0) as ExecutionResult;
  }
  if (def.input_steps.length > 0 && sameInputs(opts.resume?.input, def.input_steps)) {
    const resumed = opts.resume?.input as NonNullable<RunProgress['input']>;
    for (const record of resumed.records) steps.push(stamp(record, 1));
    scope.sources = { ...resumed.sources };
    progress.input = resumed;
  } else if (def.input_steps.length > 0) {
    const loaded = await Promise.all(
      def.input_steps.map(async (step, index) => {
        const t = performance.now();
        const notes: Deprecation[] = [];
        const deprecated = (d: Omit<Deprecation, 'at'>) => notes.push({ at: `input_steps[${index}].source`, ...d });
        let rows = false;
        const readRows = () => {
          rows = true;
        };
        const marked = (r: StepRecord): StepRecord => stamp(rows ? { ...r, caller_rows: true } : r);
        const source = keep ? sourceInput(step.source) : undefined;
        try {
          const value = await runners.loadSource(step, deprecated, readRows).finally(stepEnded);
          const data = dataOf(keep, source?.input, { value, sent: source?.sent });
          return { record: marked(noted({ kind: 'input', index, name: step.name, status: 'succeeded', duration_ms: ms(t), ...data }, notes)), value };
        } catch (err) {
          const data = dataOf(keep, source?.input);
          return { record: marked(noted({ kind: 'input', index, name: step.name, status: 'failed', duration_ms: ms(t), error: errorOf(err), ...data }, notes)) };
        }
      }),
    );
    for (const [i, l] of loaded.entries()) {
      steps.push(l.record);
      if (l.record.status === 'succeeded') scope.sources[l.record.name as string] = l.value;
      else error ??= { step: `input_steps[${i}]`, ...(l.record.error as StepError) };
    }
    if (error) {
      skipRest(0);
      return finish(null);
    }
    progress.input = { records: loaded.map((l) => l.record), sources: { ...scope.sources } };
    await report();
  }

  // 2. STF steps, in order; each gets the previous output (or $input) unless its mappings say otherwise. The steps an
  // earlier attempt finished (at the version that runs now) are reused, up to the first that must run again.
  let last: unknown = input;
  let reusing = true;
  for (const [index, step] of def.stf_steps.entries()) {
    const stf = resolved.stfs[index];
    const done = reusing ? opts.resume?.stf[index] : undefined;
    if (done && stf && done.record.status === 'succeeded' && done.record.stf_version_id === stf.stf_version_id) {
      steps.push(stamp(done.record, 1));
      progress.stf.push(done);
      scope.steps.push(done.output);
      last = done.output;
      continue;
    }
    reusing = false;
    const stopped = cancelledBefore(index);
    if (stopped) return stopped;
    const t = performance.now();
    const base: StepRecord = noted(
      { kind: 'stf', index, stf_version_id: stf?.stf_version_id ?? step.stf_version_id, status: 'failed' },
      legacyMappings(`stf_steps[${index}]`, step.input_mappings),
    );
    if (!stf) {
      error = { step: `stf_steps[${index}]`, kind: 'not_found', message: `STF version ${step.stf_version_id} no longer exists in this workspace` };
      steps.push(stamp({ ...base, error: { kind: error.kind, message: error.message } }));
      skipRest(index + 1);
      return finish(null);
    }
    Object.assign(base, { stf_id: stf.stf_id, version: stf.version });
    const stepInput = buildStepInput(step.input_mappings, scope, last);
    const outcome = await runners
      .runStf(stf, stepInput, scope.sources, opts.stop)
      .catch((err): StfOutcome => ({ ok: false, error: errorOf(err) }));
    stepEnded();
    if (!outcome.ok && opts.stop?.aborted) {
      // Stopped by the cancel while it ran: the step says so, the rest is skipped, and the run ends `cancelled`.
      const stoppedError: StepError = { kind: 'cancelled', message: 'Cancelled while it ran: the STF was stopped' };
      steps.push(stamp({ ...base, duration_ms: ms(t), error: stoppedError, ...dataOf(keep, stepInput) }));
      error = { step: 'run', kind: 'cancelled', message: 'Cancelled: the STF under way was stopped and the steps that had not started were skipped' };
      skipRest(index + 1);
      return { ...finish(null), status: 'cancelled' };
    }
    if (!outcome.ok) {
      error = { step: `stf_steps[${index}]`, ...outcome.error };
      steps.push(stamp({ ...base, duration_ms: ms(t), error: outcome.error, ...dataOf(keep, stepInput) }));
      skipRest(index + 1);
      return finish(null);
    }
    const record = stamp({ ...base, status: 'succeeded', duration_ms: ms(t), ...dataOf(keep, stepInput, { value: outcome.output }) });
    steps.push(record);
    scope.steps.push(outcome.output);
    last = outcome.output;
    progress.stf.push({ record, output: outcome.output });
    await report();
  }
  const output = def.stf_steps.length > 0 ? last : input;

  const stopped = cancelledBefore(def.stf_steps.length);
  if (stopped) return stopped;

  // 3. Effect steps, in parallel; each reads the workflow's result unless its mappings say otherwise. One an earlier
  // attempt delivered (2xx) is not called again. Each record is kept (and reported) as its call ends.
  const firstEffect = steps.length;
  await Promise.all(
    def.effect_steps.map(async (step, index): Promise<void> => {
      const effect = resolved.effects[index];
      const delivered = opts.resume?.effects.find((r) => r.index === index && r.delivered === true);
      if (effect && delivered && delivered.effect_id === effect.effect_id) {
        steps.push(stamp(delivered, 1));
        progress.effects.push(delivered);
        return;
      }
      const record = stamp(await callEffect(step, index, effect));
      stepEnded();
      steps.push(record);
      if (record.delivered) progress.effects.push(record);
      await report();
    }),
  );
  // In step order, whatever order they ended in.
  const effects = steps.splice(firstEffect).sort((a, b) => a.index - b.index);
  steps.push(...effects);
  for (const record of effects) {
    if (record.status === 'failed' && !error) error = { step: `effect_steps[${record.index}]`, ...(record.error as StepError) };
  }
  return finish(output);

  async function callEffect(step: WorkflowDefinition['effect_steps'][number], index: number, effect: ResolvedEffect | undefined): Promise<StepRecord> {
    const t = performance.now();
    const notes = legacyMappings(`effect_steps[${index}]`, step.input_mappings);
    const base: StepRecord = { kind: 'effect', index, effect_version_id: effect?.effect_version_id ?? step.effect_version_id, status: 'failed' };
    if (!effect) {
      return noted({ ...base, error: { kind: 'not_found', message: `effect version ${step.effect_version_id} no longer exists in this workspace` } }, notes);
    }
    const key = effectKey(index, effect);
    Object.assign(base, { effect_id: effect.effect_id, version: effect.version });
    const effectInput = buildStepInput(step.input_mappings, scope, output);
    // The effect's own mappings that read this input as `$.input.…` (effect-runner mappings.ts) are noted too.
    for (const a of effectInputAliases(effect.spec, effectInput)) notes.push({ ...a, at: `effect_steps[${index}].effect.${a.at}` });
    if (notes.length > 0) base.deprecations = notes;
    // Kept: the request as the runner builds it (credentials redacted), else the input its mappings could not build one of.
    const request = keep ? effectRequest(effect.spec, effectInput) : undefined;
    const kept = (answer?: unknown) => dataOf(keep, request ? request.request : effectInput, answer === undefined ? undefined : { value: answer, sent: request?.sent });
    try {
      const res = await runners.runEffect(effect, effectInput, key);
      const ok = res.status >= 200 && res.status < 300;
      const record: StepRecord = {
        ...base,
        duration_ms: ms(t),
        status_code: res.status,
        attempts: res.attempts,
        idempotency_key: key,
        delivered: ok,
        ...kept({ status: res.status, body: res.body ?? null }),
      };
      if (res.status >= 400) {
        return { ...record, error: { kind: 'http_status', message: `the endpoint answered HTTP ${res.status}` } };
      }
      return { ...record, status: 'succeeded' };
    } catch (err) {
      const e = err as { status?: unknown; attempts?: unknown };
      return {
        ...base,
        duration_ms: ms(t),
        error: errorOf(err),
        ...(typeof e.status === 'number' ? { status_code: e.status } : {}),
        ...(typeof e.attempts === 'number' ? { attempts: e.attempts } : {}),
        idempotency_key: key,
        delivered: false,
        ...kept(),
      };
    }
  }
}
