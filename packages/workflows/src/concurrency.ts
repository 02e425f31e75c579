import { ServiceError } from '@wds/errors';
import { AdmissionRefused, FairAdmission } from '@wds/fair-admission';

export interface WorkflowConcurrencyOptions {
  /** Executions one principal may have in progress at once. WORKFLOW_WORKSPACE_CONCURRENCY. */
  maxRunning: number;
  /** Executions one principal may have waiting; one more is refused at once. WORKFLOW_WORKSPACE_QUEUE. */
  maxQueued: number;
  /** How long an execution may wait for its turn before it is refused. WORKFLOW_QUEUE_TIMEOUT_MS. */
  maxWaitMs: number;
}

/**
 * A cap on each principal's workflow executions at once (the key: the workspace's creator, workspacePrincipal, so
 * one user's many workspaces share one cap): a semaphore per principal (FairAdmission, one key per principal) with a
 * bounded queue and a bounded wait, so one user's burst cannot hold every STF slot and connection of the service;
 * beyond either bound the execution is refused with 429 TOO_MANY_REQUESTS before anything of it ran or was recorded.
 * Acquire before starting the run, release when it has ended.
 */
export class WorkflowConcurrency {
  private readonly admission: FairAdmission;

  constructor(private readonly opts: WorkflowConcurrencyOptions) {
    this.admission = new FairAdmission({ maxRunningPerKey: opts.maxRunning, maxWaitingPerKey: opts.maxQueued });
  }

  /** Resolves with the release function once the principal has a free place; rejects with a 429 ServiceError. */
  async acquire(principal: string, signal?: AbortSignal): Promise<() => void> {
    try {
      const grant = await this.admission.acquire(principal, { timeoutMs: this.opts.maxWaitMs, ...(signal ? { signal } : {}) });
      return () => grant.release();
    } catch (err) {
      // The caller went away while it waited: nothing of it ran or was recorded.
      if (signal?.aborted && !(err instanceof AdmissionRefused)) {
        throw new ServiceError('CONFLICT', 'The execution was cancelled before it started', 'nothing of it ran or was recorded');
      }
      if (!(err instanceof AdmissionRefused)) throw err;
      throw err.reason === 'timeout'
        ? new ServiceError(
            'TOO_MANY_REQUESTS',
            `The workflow executions of this workspace's creator did not free a place within ${this.opts.maxWaitMs} ms`,
            `at most ${this.opts.maxRunning} run at once; retry when some have finished`,
          )
        : new ServiceError(
            'TOO_MANY_REQUESTS',
            `The workspaces of this workspace's creator already have ${err.load.running} workflow executions in progress and ${err.load.waiting} waiting`,
            `at most ${this.opts.maxRunning} run and ${this.opts.maxQueued} wait at once; retry when some have finished`,
          );
    }
  }

  /** Executions in progress and waiting of one principal. */
  stats(principal: string): { running: number; waiting: number } {
    return this.admission.load(principal);
  }
}
