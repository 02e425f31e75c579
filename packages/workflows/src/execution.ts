/**
 * One workflow execution with the service's real step runners (runners.ts). The run is recorded when it starts, as
 * `running` and owned by this process, which keeps it alive with a heartbeat (and the steps finished so far) until
 * it ends; it is then recorded with its audit entry. If the process dies first, a maintenance sweep settles it
 * (liveness.ts): a queued run goes back to the queue and its next attempt resumes it — the steps it finished are not
 * run again (progress.ts) — and a waiting one fails as interrupted. Every effect's Idempotency-Key comes from what
 * the run is the delivery of (keys.ts), never from the attempt. At most WORKFLOW_WORKSPACE_CONCURRENCY executions of
 * one workspace run at once.
 */
import type { AuditEntry } from '@wds/audit';
import { newId, parseUuid } from '@wds/db';
import { workspacePrincipal } from '@wds/workspace-sql';
import { ServiceError, notFound } from '@wds/errors';
import type { RunWorkspace } from '@wds/stf-runner';
import { WorkflowConcurrency } from './concurrency.js';
import { type ExecutionResult, executeWorkflow, type ResolvedStf, type StepRecord } from './engine.js';
import { cachedSteps } from './cached.js';
import { effectIdempotencyKey, originOf, runOrigin } from './keys.js';
import { RunHeartbeat } from './liveness.js';
import { ProgressWriter, storedProgress } from './progress.js';
import { createStepRunners, DATABASE_UNAVAILABLE, type WorkflowExecutionDeps } from './runners.js';
import { DEFAULT_STEP_DATA_MAX_BYTES, maskedJson, secretMasker, stepDataKeeper } from './step-data.js';
import { openSealedSecrets } from '@wds/stfs';
import { isInGroup } from '@wds/policies';
import { resolveAccess, findLiveWorkspace } from '@wds/workspaces';
import { AUTOMATION_OF, claimQueuedRun, failQueuedRun, finishRun, getWorkflow, newRunId, requeueRun, startRun } from './store.js';
import type { WorkflowView } from './views.js';
import { type AcceptedVersions, AS_NAMED, boundSteps, definitionDigest, requestedVersions, storedAccepted } from './accepted.js';

/** The audit entry written with the run; its details are the run's own (run id, status, failed step). */
export type ExecutionAudit = Omit<AuditEntry, 'details'>;

export interface ExecutionRequest {
  workspace: RunWorkspace;
  workflow: WorkflowView;
  input: unknown;
  /** The executing user, or null when anonymous. */
  executedBy: string | null;
  audit: ExecutionAudit;
  /** The run it runs again with the same `$input` (rerun_workflow_run), recorded with it. */
  rerunOf?: string | undefined;
  /**
   * Aborted when the caller waiting for the run went away (an MCP call cancelled or out of time, an HTTP client
   * disconnected): as a cancel of the run (cancel_workflow_run), no later step starts and the run ends `cancelled` —
   * and the STF step under way is stopped too, freeing its slot. A wait for the workspace's turn ends at once (409,
   * nothing recorded).
   */
  signal?: AbortSignal | undefined;
  /** Called as each step ends: steps ended, of how many (progress notifications); must not throw. */
  onStepEnd?: ((done: number, total: number) => void) | undefined;
}

export interface RecordedRun {
  runId: string;
  result: ExecutionResult;
}

/** A run already recorded (queued, then claimed by this process): its id; the engine must not record it again. */
interface ClaimedRun {
  runId: string;
  /**
   * The versions it runs (accepted.ts): a schedule's, hook's or trigger's, those its workflow's last save accepted; an
   * async run's, those of the moment it was asked for. Never a newer version another editor added meanwhile.
   */
  accepted: AcceptedVersions;
  /** Which attempt this is (1: the first; more: resumed after a crash), what the run is the delivery of, and what earlier attempts finished. */
  attempt: number;
  origin: string;
  checkpoint: unknown;
}

/**
 * The executions of one set of services: one heartbeat for all their runs, and one per-workspace cap. One per
 * process, built with its services (`services.executions`); tests build their own.
 */
export class WorkflowExecutions {
  readonly #deps: WorkflowExecutionDeps;
  readonly #gate: WorkflowConcurrency;
  readonly #beats: RunHeartbeat;
  /** The runs in progress here, to stop them at once when a cancel is asked in this process. */
  readonly #running = new Map<string, AbortController>();

  constructor(deps: WorkflowExecutionDeps) {
    this.#deps = deps;
    this.#gate = new WorkflowConcurrency({
      maxRunning: deps.config.WORKFLOW_WORKSPACE_CONCURRENCY,
      maxQueued: deps.config.WORKFLOW_WORKSPACE_QUEUE,
      maxWaitMs: deps.config.WORKFLOW_QUEUE_TIMEOUT_MS,
    });
    this.#beats = new RunHeartbeat({
      db: deps.db,
      intervalMs: deps.config.RUN_HEARTBEAT_INTERVAL_MS,
      onError: (err) => deps.logger.warn({ err: err.message }, 'workflow run heartbeat failed'),
    });
  }

  /** Waits for the turn of the workspace's creator (bounded; 429 beyond), then runs and records the execution. */
  async execute(req: ExecutionRequest): Promise<RecordedRun> {
    const release = await this.#gate.acquire(workspacePrincipal(req.workspace), req.signal);
    try {
      return await this.#run(req);
    } finally {
      release();
    }
  }

  /**
   * Runs a queued run (a job of the workflow-runs queue): claims it, checks that it may still run (mayRun), and runs
   * it as its user. Undefined when there was nothing to run (cancelled, or claimed elsewhere); a run that may not run any more
   * ends `failed` with why. When the workspace has no free place it goes back to the queue and this throws (the job
   * is tried again later).
   */
  async runQueued(runId: string, audit: Pick<ExecutionAudit, 'action' | 'transport'>): Promise<RecordedRun | undefined> {
    const { db } = this.#deps;
    const row = await claimQueuedRun(db, runId, this.#beats.owner);
    if (!row) return undefined;
    const refuse = async (kind: string, message: string) => {
      await failQueuedRun(db, runId, { kind, message });
      return undefined;
    };
    // Whether it may still run, as whom: a failure to find out (the database away) is not an answer, so the run goes
    // back to the queue and the job is tried again; an answer of no ends the run failed with why.
    let checked: Awaited<ReturnType<typeof this.mayRun>>;
    try {
      checked = await this.mayRun(row);
    } catch (err) {
      await requeueRun(db, runId).catch(() => undefined);
      throw err;
    }
    if ('refused' in checked) return refuse(checked.refused.kind, checked.refused.message);
    const { workspace, workflow, accepted } = checked;
    let release: () => void;
    try {
      release = await this.#gate.acquire(workspacePrincipal(workspace));
    } catch (err) {
      await requeueRun(db, runId);
      throw err;
    }
    try {
      return await this.#run(
        {
          workspace,
          workflow,
          input: row.input,
          executedBy: row.executed_by,
          rerunOf: row.rerun_of ?? undefined,
          audit: {
            ...audit,
            workspaceId: workspace.id,
            userId: row.executed_by,
            apiKeyId: null,
            requestId: null,
            resourceType: 'workflow',
            resourceId: workflow.id,
          },
        },
        { runId, accepted, attempt: row.attempts ?? 1, origin: originOf(row), checkpoint: row.checkpoint },
      ).catch(async (err: unknown) => {
        // It could not start (its steps could not be read, say): failed with why, not left for the sweep to call
        // interrupted. A run that got as far as recording its end is not touched.
        this.#deps.logger.error({ err, run_id: runId }, 'a queued workflow run could not start');
        await failQueuedRun(db, runId, { kind: 'internal', message: 'The run could not start' }).catch(() => undefined);
        throw err;
      });
    } finally {
      release();
    }
  }

  /**
   * Whether a claimed run may run now: its workspace and workflow live; its user still a member — and, for a run its
   * user did not start by hand (a schedule, a hook, an event), still a workflow editor: automation runs as its owner,
   * who must keep the right to set it up — or, anonymous, the workflow still open to anonymous execution. Also which
   * versions it runs (`accepted`): a schedule's, hook's or trigger's those its workflow's last save accepted, an
   * async run's its own (and the workflow's steps must still be those it was asked for).
   */
  async mayRun(row: {
    workspace_id: string;
    workflow_id: string;
    executed_by: string | null;
    trigger: string;
    trigger_id: string | null;
    accepted_versions?: unknown;
  }) {
    const { db } = this.#deps;
    const refused = (kind: string, message: string) => ({ refused: { kind, message } }) as const;
    const workspace = await findLiveWorkspace(db, row.workspace_id);
    if (!workspace) return refused('not_found', 'The workspace was deleted before the run started');
    const workflow = await getWorkflow(db, workspace.id, parseUuid(row.workflow_id, () => notFound('Workflow'))).catch((err: unknown) => {
      if ((err as { code?: string }).code === 'NOT_FOUND') return undefined;
      throw err;
    });
    if (!workflow) return refused('not_found', 'The workflow was deleted before the run started');
    // Read after the workflow: whoever changes its steps, or saves it with newer versions, takes its automation over
    // in the same transaction, so a run that would get them sees the new owner here, and does not run as the old one.
    let accepted: AcceptedVersions = storedAccepted(row.accepted_versions) ?? AS_NAMED;
    const automation = row.trigger in AUTOMATION_OF ? AUTOMATION_OF[row.trigger as keyof typeof AUTOMATION_OF] : undefined;
    if (automation) {
      const owner = row.trigger_id ? await db.selectFrom(automation.table).select('created_by').where('id', '=', row.trigger_id).executeTakeFirst() : undefined;
      // Gone, it can no longer be taken over by a change of the workflow: it does not run as its last owner.
      if (!owner) return refused('not_found', `The ${automation.name} that queued this run was deleted before it started`);
      if (owner.created_by !== row.executed_by) {
        return refused('owner_changed', `The ${automation.name} that queued this run changed hands before it started (another editor changed it, or its workflow)`);
      }
      // What the workflow's last save accepted (stored with the steps it was accepted for: one row, read at once), or
      // a newer version its owner wrote.
      accepted = await requestedVersions(db, workspace.id, workflow, workflow.accepted_versions, owner.created_by);
    }
    if (accepted.definition !== undefined && accepted.definition !== definitionDigest(workflow)) {
      return refused('workflow_changed', "The workflow's steps changed after this run was queued: it runs only the steps and versions its user accepted");
    }
    if (row.executed_by !== null) {
      const member = await resolveAccess(db, { userId: row.executed_by, scopedWorkspaceId: null }, workspace.id).catch((err: unknown) => {
        if (['NOT_FOUND', 'FORBIDDEN'].includes((err as { code?: string }).code ?? '')) return undefined;
        throw err;
      });
      if (!member) return refused('forbidden', 'The user it runs as is no longer a member of the workspace');
      if (row.trigger !== 'async' && row.trigger !== 'request') {
        const group = workspace.workflow_editor_policy_group_id;
        const editor = group ? await isInGroup(db, workspace.id, group, row.executed_by) : member.role === 'admin';
        if (!editor) return refused('forbidden', 'The user it runs as is no longer a workflow editor (automation runs as its owner, who must be one)');
      }
    } else if (!workflow.allow_anonymous_execute) {
      return refused('forbidden', 'The workflow no longer allows anonymous execution');
    }
    return { workspace, workflow, accepted };
  }

  /**
   * The secret values of the run's STFs, to mask in what the run keeps. One that cannot be opened (a key changed) is
   * left out: its step cannot run with it either.
   */
  #secretsOf(stfs: readonly (ResolvedStf | undefined)[]): string[] {
    const box = this.#deps.secrets;
    if (!box) return [];
    const values: string[] = [];
    for (const stf of stfs) {
      if (!stf || stf.sealed_secrets.length === 0) continue;
      try {
        values.push(...Object.values(openSealedSecrets(box, stf.stf_id, stf.sealed_secrets)));
      } catch {
        // not openable: not usable
      }
    }
    return values;
  }

  /** Stops a run in progress in this process before its next step (a cancel asked here); false when none is. */
  cancelLocal(runId: string): boolean {
    const controller = this.#running.get(runId);
    controller?.abort();
    return controller !== undefined;
  }

  async #run(req: ExecutionRequest, claimed?: ClaimedRun): Promise<RecordedRun> {
    const { db, logger } = this.#deps;
    const { workspace, workflow, input, executedBy, audit } = req;
    const runId = claimed?.runId ?? newRunId();
    const started = performance.now();
    // A queued run runs the versions bound to it, one asked for now those its user may run now (accepted.ts): every
    // step pinned to one, which its step record names.
    const accepted = claimed?.accepted ?? (await requestedVersions(db, workspace.id, workflow, workflow.accepted_versions, executedBy));
    const def = { ...workflow, ...boundSteps(workflow, accepted) };
    const { stfs, effects } = await cachedSteps(db, this.#deps.runCache, workspace.id, def);
    const runners = createStepRunners(this.#deps, workspace, executedBy);
    const attempt = claimed?.attempt ?? 1;
    const origin = claimed?.origin ?? runOrigin.run('request', runId);
    // What an earlier attempt finished, if it ran these very steps at these versions.
    const digest = definitionDigest(def);
    const resume = claimed && attempt > 1 ? storedProgress(claimed.checkpoint, digest) : undefined;

    // Visible as `running` from its start, and never left so: a heartbeat while it runs, a sweep if it stops.
    if (!claimed) await startRun(db, runId, workflow, input, executedBy, this.#beats.owner, req.rerunOf ?? null);
    // What the run keeps of each step (step-data.ts), the secrets of its STFs masked; and in the run's own record.
    const secrets = this.#secretsOf(stfs);
    const stepData = stepDataKeeper({ maxBytes: this.#deps.config.WORKFLOW_STEP_DATA_MAX_BYTES ?? DEFAULT_STEP_DATA_MAX_BYTES, secrets });
    const progress: StepRecord[] = [];
    const writer = new ProgressWriter({
      db,
      runId,
      attempt,
      definition: digest,
      steps: progress,
      // A waiting run is never resumed (its caller saw it fail): it records which effects were delivered, no outputs.
      checkpoint: claimed !== undefined,
      onError: (err) => logger.warn({ err: err.message, run_id: runId }, 'recording a workflow run\'s progress failed'),
    });
    const cancel = new AbortController();
    // The caller that waits for it went away: the run is cancelled as if asked (until it ends).
    const callerGone = () => cancel.abort();
    req.signal?.addEventListener('abort', callerGone, { once: true });
    if (req.signal?.aborted) cancel.abort();
    this.#running.set(runId, cancel);
    this.#beats.track(runId, progress, () => cancel.abort(), attempt);
    try {
      if (claimed) {
        // A cancel asked between its claim and now reached no process yet: read it here, before any step starts.
        const asked = await db.selectFrom('platform.workflow_runs').select('cancel_requested_at').where('id', '=', runId).executeTakeFirst();
        if (asked?.cancel_requested_at) cancel.abort();
      }
      let result: ExecutionResult;
      try {
        result = await executeWorkflow(def, input, { stfs, effects }, runners, {
          runId,
          steps: progress,
          signal: cancel.signal,
          ...(req.signal ? { stop: req.signal } : {}),
          effectKey: (step, effect) => effectIdempotencyKey({ workspaceId: workspace.id, workflowId: workflow.id, origin, step, effectId: effect.effect_id }),
          attempt,
          ...(resume ? { resume } : {}),
          onProgress: writer.write,
          ...(stepData ? { stepData } : {}),
          ...(req.onStepEnd ? { onStepEnd: req.onStepEnd } : {}),
        });
      } catch (err) {
        logger.error({ err, run_id: runId }, 'workflow engine failed');
        result = { status: 'failed', output: null, error: { step: 'engine', kind: 'internal', message: 'The workflow engine failed' }, steps: [], duration_ms: 0 };
      }
      // The run record and the audit entry (run id, status, failed step) are written together — unless another
      // attempt took the run over meanwhile (this one was only slow): its own end is the run's.
      // The record masks the STFs' secrets in the output and errors too (the last STF step's output is the run's); the
      // caller of a waiting execution gets the result as the steps made it.
      await finishRun(db, runId, recordedResult(result, secrets), undefined, {
        ...audit,
        details: {
          run_id: runId,
          status: result.status,
          ...(result.error ? { failed_step: result.error.step } : {}),
          ...(claimed ? { queued: true } : {}),
          ...(attempt > 1 ? { attempt } : {}),
          ...(req.rerunOf ? { rerun_of: req.rerunOf } : {}),
        },
      }, attempt);
      this.#deps.metrics?.workflowRun?.(result.status, (performance.now() - started) / 1000);
      return { runId, result };
    } finally {
      // Left `running` only if finishing failed: the sweep then settles it once the heartbeat is stale.
      this.#beats.untrack(runId);
      this.#running.delete(runId);
      req.signal?.removeEventListener('abort', callerGone);
    }
  }
}

/** A result as the run records it: the secrets of its STFs masked in its output and errors (its steps' data is already). */
function recordedResult(result: ExecutionResult, secrets: readonly string[]): ExecutionResult {
  const mask = secretMasker(secrets);
  if (!mask) return result;
  const masked = <T>(value: T): T => JSON.parse(maskedJson(value, mask)) as T;
  return { ...result, output: masked(result.output ?? null), error: result.error ? masked(result.error) : null, steps: result.steps.map((s) => (s.error ? { ...s, error: masked(s.error) } : s)) };
}

/** What carries the process's executions (apps/api's Services: built once, in openServices). */
export interface WithExecutions {
  executions: WorkflowExecutions;
}

/**
 * What an execution answers: the workflow's output, 422 RUNTIME_ERROR naming the failed step and the run, 503 when
 * that step lost its database connection (an outage, not the workflow's failure: try again), or 409 when it was
 * cancelled.
 */
export function runOutput(run: RecordedRun): unknown {
  const { error, output } = run.result;
  if (run.result.status === 'cancelled') {
    throw new ServiceError('CONFLICT', 'The run was cancelled', JSON.stringify({ run_id: run.runId, step: 'run', kind: 'cancelled' }));
  }
  if (error) {
    const details = JSON.stringify({ run_id: run.runId, step: error.step, kind: error.kind, message: error.message, ...(error.details ? { details: error.details } : {}) });
    if (error.kind === DATABASE_UNAVAILABLE) {
      throw new ServiceError('SERVICE_UNAVAILABLE', `Workflow step ${error.step} lost its database connection`, details, { retryAfterSeconds: 1 });
    }
    throw new ServiceError('RUNTIME_ERROR', `Workflow step ${error.step} failed: ${error.message}`, details);
  }
  return output ?? null;
}
