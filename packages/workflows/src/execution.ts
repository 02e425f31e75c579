/**
 * One workflow execution with the service's real step runners (runners.ts). The run is recorded when it starts, as
 * `running` and owned by this process, which keeps it alive with a heartbeat (and the steps finished so far) until
 * it ends; it is then recorded with its audit entry. If the process dies first, a maintenance sweep fails it as
 * interrupted (liveness.ts). At most WORKFLOW_WORKSPACE_CONCURRENCY executions of one workspace run at once.
 */
import type { AuditEntry } from '@wds/audit';
import { newId } from '@wds/db';
import { ServiceError } from '@wds/errors';
import type { RunWorkspace } from '@wds/stf-runner';
import { type ExecutionResult, executeWorkflow, type StepRecord, WorkflowConcurrency } from './engine.js';
import { runCacheOf } from '@wds/stfs';
import { cachedSteps } from './cached.js';
import { RunHeartbeat } from './liveness.js';
import { createStepRunners, type WorkflowExecutionDeps } from './runners.js';
import { finishRun, newRunId, startRun, type WorkflowView } from './store.js';

/** The audit entry written with the run; its details are the run's own (run id, status, failed step). */
export type ExecutionAudit = Omit<AuditEntry, 'details'>;

export interface ExecutionRequest {
  workspace: RunWorkspace;
  workflow: WorkflowView;
  input: unknown;
  /** The executing user, or null when anonymous. */
  executedBy: string | null;
  audit: ExecutionAudit;
}

export interface RecordedRun {
  runId: string;
  result: ExecutionResult;
}

/**
 * The executions of one set of services: one heartbeat for all their runs, and one per-workspace cap. Build one per
 * process (executeAndRecord keeps one per deps object); tests build their own.
 */
export class WorkflowExecutions {
  readonly #deps: WorkflowExecutionDeps;
  readonly #gate: WorkflowConcurrency;
  readonly #beats: RunHeartbeat;

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

  /** Waits for the workspace's turn (bounded; 429 beyond), then runs and records the execution. */
  async execute(req: ExecutionRequest): Promise<RecordedRun> {
    const release = await this.#gate.acquire(req.workspace.id);
    try {
      return await this.#run(req);
    } finally {
      release();
    }
  }

  async #run(req: ExecutionRequest): Promise<RecordedRun> {
    const { db, logger } = this.#deps;
    const { workspace, workflow, input, executedBy, audit } = req;
    const runId = newRunId();
    const started = performance.now();
    const { stfs, effects } = await cachedSteps(db, runCacheOf(this.#deps), workspace.id, workflow);
    const runners = createStepRunners(this.#deps, workspace, executedBy);

    // Visible as `running` from its start, and never left so: a heartbeat while it runs, a sweep if it stops.
    await startRun(db, runId, workflow, input, executedBy, this.#beats.owner);
    const progress: StepRecord[] = [];
    this.#beats.track(runId, progress);
    try {
      let result: ExecutionResult;
      try {
        result = await executeWorkflow(workflow, input, { stfs, effects }, runners, { runId, steps: progress });
      } catch (err) {
        logger.error({ err, run_id: runId }, 'workflow engine failed');
        result = { status: 'failed', output: null, error: { step: 'engine', kind: 'internal', message: 'The workflow engine failed' }, steps: [], duration_ms: 0 };
      }
      // The run record and the audit entry (run id, status, failed step) are written together.
      await finishRun(db, runId, result, undefined, {
        id: newId(),
        workspace_id: audit.workspaceId,
        user_id: audit.userId,
        api_key_id: audit.apiKeyId,
        action: audit.action,
        resource_type: audit.resourceType,
        resource_id: audit.resourceId,
        details: JSON.stringify({ run_id: runId, status: result.status, ...(result.error ? { failed_step: result.error.step } : {}) }),
        request_id: audit.requestId ?? null,
        transport: audit.transport ?? null,
      });
      this.#deps.metrics?.workflowRun?.(result.status, (performance.now() - started) / 1000);
      return { runId, result };
    } finally {
      // Left `running` only if finishing failed: the sweep then settles it once the heartbeat is stale.
      this.#beats.untrack(runId);
    }
  }
}

/** One WorkflowExecutions per deps object: a process passes the same services each time; each test harness has its own. */
const executions = new WeakMap<WorkflowExecutionDeps, WorkflowExecutions>();

/** Runs and records one execution with the executions of `deps` (their heartbeat and per-workspace cap). */
export function executeAndRecord(deps: WorkflowExecutionDeps, req: ExecutionRequest): Promise<RecordedRun> {
  let ex = executions.get(deps);
  if (!ex) {
    ex = new WorkflowExecutions(deps);
    executions.set(deps, ex);
  }
  return ex.execute(req);
}

/** What an execution answers: the workflow's output, or 422 RUNTIME_ERROR naming the failed step and the run. */
export function runOutput(run: RecordedRun): unknown {
  const { error, output } = run.result;
  if (error) {
    throw new ServiceError(
      'RUNTIME_ERROR',
      `Workflow step ${error.step} failed: ${error.message}`,
      JSON.stringify({ run_id: run.runId, step: error.step, kind: error.kind, message: error.message, ...(error.details ? { details: error.details } : {}) }),
    );
  }
  return output ?? null;
}
