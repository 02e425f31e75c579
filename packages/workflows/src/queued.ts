/**
 * Runs that do not hold a connection (issue 19): a request (or a schedule, a hook, an event) records the run as
 * `queued` with its audit entry and puts its id on the workflow-runs job queue; whichever process works the queue
 * claims it (once: the claim is a conditional update), checks it may still run, and runs it as its user. A process
 * that dies after recording but before queuing leaves a queued run without a job: a sweep queues it again. Jobs are
 * keyed by run id, so a run is never queued twice at once, and a job for a run that is no longer queued does nothing.
 */
import type { BackgroundJobs } from '@wds/jobs';
import { newId, type Uuid } from '@wds/db';
import { requestedVersions } from './accepted.js';
import { authorizeExecution, type ExecuteWorkflowRequest } from './authorize.js';
import type { WithExecutions } from './execution.js';
import { settleInterruptedRuns } from './liveness.js';
import type { WorkflowExecutionDeps } from './runners.js';
import { ServiceError } from '@wds/errors';
import { cancelRun, countQueuedRuns, queueRun, staleQueuedRuns } from './store.js';
import type { WorkflowRunView } from './views.js';

export const WORKFLOW_RUNS_QUEUE = 'workflow-runs';

/** What queued runs need of the service: the executions' own needs and the job queue. */
export interface WorkflowJobDeps extends WorkflowExecutionDeps {
  jobs: Pick<BackgroundJobs, 'enqueue' | 'handle'>;
}

/** A queued run's job: the run id only (everything else is in its row). */
interface RunJob {
  runId: string;
}

/**
 * execute_workflow without waiting: authorizes the caller like a waiting execution, records the run as queued (with
 * its audit entry) and queues it. Returns the run id at once; the run's record tells how it goes.
 */
export async function queueWorkflowAs(deps: WorkflowJobDeps, req: ExecuteWorkflowRequest): Promise<string> {
  const { workspace, workflow } = await authorizeExecution(deps.db, req, deps.runCache);
  const executedBy = req.member?.userId ?? null;
  // Queued runs are taken in order across workspaces: one workspace may not fill the queue without bound.
  const max = deps.config.WORKFLOW_WORKSPACE_QUEUED_MAX;
  if ((await countQueuedRuns(deps.db, workspace.id)) >= max) {
    throw new ServiceError('TOO_MANY_REQUESTS', `This workspace already has ${max} workflow runs queued`, 'retry when some have started');
  }
  // It runs what was asked for now: these versions and these steps, whatever another editor adds or changes meanwhile.
  const accepted = await requestedVersions(deps.db, workspace.id, workflow, workflow.accepted_versions, executedBy);
  // Its origin is itself (store.ts queueRun): a resumed attempt is the same run, and so the same delivery.
  const runId = await queueRun(deps.db, { workflow, input: req.input, executedBy, trigger: 'async', accepted, rerunOf: req.rerunOf }, (id) => ({
    workspaceId: workspace.id,
    userId: executedBy,
    apiKeyId: req.audit.apiKeyId,
    action: req.audit.action,
    resourceType: 'workflow',
    resourceId: workflow.id,
    details: { run_id: id, status: 'queued', trigger: 'async', ...(req.rerunOf ? { rerun_of: req.rerunOf } : {}) },
    requestId: req.audit.requestId,
    transport: req.audit.transport,
  }));
  await enqueueRun(deps, runId);
  return runId;
}

/**
 * Puts a recorded run on the queue; a failure is logged, not thrown: the sweep queues it again (the run is kept).
 * Its priority is minus the runs queued or running in all workspaces of its workspace's creator (the principal,
 * @wds/workspace-sql workspacePrincipal), so one user's backlog over any number of workspaces does not hold up the
 * next run of another (the queue takes higher priorities first, then the oldest). Its job is keyed by the run and
 * the attempt it is for: a run resumed after a crash gets its job at once, while the job of the attempt that died
 * still looks active to the queue (until its heartbeat is stale, it would hold the run's key); that old job, retried
 * later, finds the run no longer queued and does nothing.
 */
export async function enqueueRun(deps: Pick<WorkflowJobDeps, 'jobs' | 'logger' | 'db'>, runId: string): Promise<void> {
  try {
    const { n, attempts } = await deps.db
      .selectFrom('platform.workflow_runs as r')
      .innerJoin('platform.workspaces as rw', 'rw.id', 'r.workspace_id')
      .innerJoin('platform.workspaces as qw', (j) =>
        j.on((eb) => eb.or([eb('qw.id', '=', eb.ref('rw.id')), eb('qw.created_by', '=', eb.ref('rw.created_by'))])),
      )
      .innerJoin('platform.workflow_runs as q', 'q.workspace_id', 'qw.id')
      .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.max('r.attempts').as('attempts')])
      .where('r.id', '=', runId)
      .where('q.status', 'in', ['queued', 'running'])
      .executeTakeFirstOrThrow();
    const key = attempts ? `run:${runId}:${Number(attempts) + 1}` : `run:${runId}`;
    await deps.jobs.enqueue(WORKFLOW_RUNS_QUEUE, { runId } satisfies RunJob, key, { priority: -Math.min(Number(n), 1_000_000) });
  } catch (err) {
    deps.logger.warn({ run_id: runId, err: (err as Error).message }, 'queuing a workflow run failed; the sweep queues it again');
  }
}

/** Attaches the workflow-runs job handler (before the queue starts). */
export function handleWorkflowRunJobs(deps: WorkflowJobDeps & WithExecutions): void {
  deps.jobs.handle(
    WORKFLOW_RUNS_QUEUE,
    async ({ data }) => {
      const { runId } = data as RunJob;
      await deps.executions.runQueued(runId, { action: 'execute_workflow', transport: null });
    },
    // A retry of a run that was claimed does nothing (it is no longer queued); a run given back for want of a free
    // place in its workspace is tried again, and after the last try the sweep queues it again.
    { concurrency: deps.config.WORKFLOW_JOB_CONCURRENCY, expireInSeconds: 3600, retryLimit: 5 },
  );
}

/**
 * The sweep of runs whose process died (liveness.ts settleInterruptedRuns): a queued kind's run (async, schedule,
 * webhook, event) goes back on the queue for its next attempt, which resumes it — the steps it finished are not run
 * again, the step under way is, an effect with the same Idempotency-Key — up to RUN_MAX_ATTEMPTS attempts, then it
 * fails as interrupted (an event's then goes dead, not retried again); a waiting run fails as interrupted (its caller
 * saw its request fail). Returns how many runs it settled.
 */
export async function resumeInterruptedRuns(deps: WorkflowJobDeps): Promise<number> {
  const settled = await settleInterruptedRuns(deps.db, { staleAfterMs: deps.config.RUN_STALE_AFTER_MS, maxAttempts: deps.config.RUN_MAX_ATTEMPTS });
  // A run whose job cannot be queued now is queued again by requeueStaleRuns (its queued_at is old).
  for (const runId of settled.resumed) await enqueueRun(deps, runId);
  if (settled.resumed.length > 0) deps.logger.warn({ runs: settled.resumed }, 'workflow runs cut by a stopped process go back to the queue to be resumed');
  return settled.resumed.length + settled.failed + settled.cancelled;
}

/** The sweep: queued runs older than RUN_STALE_AFTER_MS go on the queue again (no-op for those whose job waits). */
export async function requeueStaleRuns(deps: WorkflowJobDeps): Promise<number> {
  const ids = await staleQueuedRuns(deps.db, deps.config.RUN_STALE_AFTER_MS);
  for (const runId of ids) await enqueueRun(deps, runId);
  return ids.length;
}

/**
 * cancel_workflow_run: a queued run ends `cancelled` at once; a running one stops before its next step — at once when
 * it runs in this process, else when its process's next heartbeat reads the cancel.
 */
export async function cancelWorkflowRun(
  deps: Pick<WorkflowExecutionDeps, 'db'> & WithExecutions,
  workspaceId: string,
  workflowId: Uuid,
  runId: Uuid,
  readerId?: string,
): Promise<WorkflowRunView> {
  const run = await cancelRun(deps.db, workspaceId, workflowId, runId, readerId);
  // Running here: stopped now (its record says `cancelled` once the step under way has ended).
  if (run.status === 'running') deps.executions.cancelLocal(runId);
  return run;
}
