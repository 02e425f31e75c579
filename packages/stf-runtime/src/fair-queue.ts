/**
 * Fair admission (@wds/fair-admission) to a runtime's slots (JavaScript workers, wasm plugin workers, containers): by
 * principal (the user who created the workspace, StfRunRequest.principalId), then by workspace within it. Runs queue
 * per workspace; a freed slot goes to the waiting principal with the fewest runs in progress (among equals the one
 * served longest ago), and of its workspaces to the one with the fewest likewise. So waiting principals take turns,
 * a principal with a hundred queued runs over any number of workspaces delays another by at most the runs already
 * in progress (about one run per slot), and while others wait no principal holds more than its fair share —
 * ceil(slots / 2) with two. `maxRunningPerWorkspace` bounds a principal's runs in progress, all its workspaces
 * together. A principal alone may use every slot (up to that bound).
 *
 * Waiting counts against the run's time limit: `acquire` gives up (false) when `maxWaitMs` passes, and says how
 * long it waited so the run gets only what is left. A workspace may have `maxQueuedPerWorkspace` runs waiting; one
 * more is refused at once (StfRuntimeBusy, HTTP 429).
 */
import { AdmissionRefused, FairAdmission, type Grant, type Load } from '@wds/fair-admission';
import { StfRunCancelled, StfRuntimeBusy } from './types.js';

export type { Grant } from '@wds/fair-admission';

export interface FairQueueOptions {
  /** Slots: runs in progress at once across all workspaces. */
  capacity: number;
  /** Runs one workspace may have waiting; one more is refused (StfRuntimeBusy). */
  maxQueuedPerWorkspace: number;
  /**
   * Runs one principal (all its workspaces together) may have in progress even when no other waits (default:
   * `capacity`, i.e. only the fair-share ordering applies). Lower it to keep slots free for other tenants at the
   * cost of one tenant's bursts.
   */
  maxRunningPerWorkspace?: number;
  /** What a slot is, for the refusal's message ("JavaScript workers", "container slots"). */
  slotName: string;
}

export type WorkspaceQueueStats = Load;

export interface FairQueueStats extends WorkspaceQueueStats {
  workspaces: Record<string, WorkspaceQueueStats>;
  /** The same summed over each principal's workspaces. */
  principals: Record<string, WorkspaceQueueStats>;
}

/** The queue key of runs that name no workspace (tests, tools): they share one. */
const NO_WORKSPACE = '';

/** A runtime's slots over FairAdmission: keys are workspaces, groups their principals. */
export class FairQueue {
  private readonly admission: FairAdmission;

  constructor(private readonly opts: FairQueueOptions) {
    if (!(opts.capacity >= 1) || !(opts.maxQueuedPerWorkspace >= 0)) {
      throw new RangeError('FairQueue: capacity must be at least 1 and maxQueuedPerWorkspace at least 0');
    }
    this.admission = new FairAdmission({
      capacity: opts.capacity,
      maxRunningPerGroup: Math.max(1, Math.min(opts.capacity, opts.maxRunningPerWorkspace ?? opts.capacity)),
      maxWaitingPerKey: opts.maxQueuedPerWorkspace,
    });
  }

  get capacity(): number {
    return this.opts.capacity;
  }

  /**
   * A slot for a run of `workspaceId` of `principalId` (by default the workspace is its own principal): at once,
   * after its turn, `false` when `maxWaitMs` passed first, or a rejection (StfRuntimeBusy when the workspace's queue
   * is full, StfRunCancelled when `signal` aborted first, an Error once closed).
   */
  acquire(workspaceId: string | null | undefined, maxWaitMs: number, principalId?: string | null, signal?: AbortSignal): Promise<Grant | false> {
    const key = workspaceId ?? NO_WORKSPACE;
    return this.admission.acquire(key, { group: principalId ?? `ws:${key}`, timeoutMs: maxWaitMs, ...(signal ? { signal } : {}) }).catch((err: unknown) => {
      if (signal?.aborted && !(err instanceof AdmissionRefused && err.reason !== 'timeout')) throw new StfRunCancelled();
      if (!(err instanceof AdmissionRefused)) throw err;
      if (err.reason === 'timeout') return false;
      if (err.reason === 'closed') throw new Error('the runtime is closed');
      throw new StfRuntimeBusy(
        `This workspace already has ${err.load.waiting} STF runs waiting for one of the ${this.opts.capacity} ${this.opts.slotName}`,
        `at most ${this.opts.maxQueuedPerWorkspace} may wait; retry when some have finished`,
      );
    });
  }

  stats(): FairQueueStats {
    const { running, waiting, keys, groups } = this.admission.stats();
    return { running, waiting, workspaces: keys, principals: groups };
  }

  /** Refuses new runs and rejects the waiting ones; runs in progress release their slots as they end. */
  close(error: Error = new Error('the runtime is closed')): void {
    this.admission.close(error);
  }
}
