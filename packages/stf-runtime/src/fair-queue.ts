/**
 * Fair admission to a runtime's slots (JavaScript workers, wasm plugin workers, containers), in two levels: by
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
import { StfRuntimeBusy } from './types.js';

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

export interface Grant {
  /** Milliseconds spent waiting for the slot. */
  waitedMs: number;
  /** Gives the slot back (later calls do nothing). */
  release(): void;
}

export interface WorkspaceQueueStats {
  running: number;
  waiting: number;
}

export interface FairQueueStats extends WorkspaceQueueStats {
  workspaces: Record<string, WorkspaceQueueStats>;
  /** The same summed over each principal's workspaces. */
  principals: Record<string, WorkspaceQueueStats>;
}

/** The queue key of runs that name no workspace (tests, tools): they share one. */
const NO_WORKSPACE = '';

interface Principal {
  key: string;
  running: number;
  /** Its workspaces with runs in progress or waiting. */
  tenants: number;
  /** Turn number of its last grant: among equals, the principal served longest ago goes first. */
  served: number;
}

interface Tenant {
  key: string;
  principal: Principal;
  running: number;
  waiters: Waiter[];
  /** Turn number of its last grant: among equals, the workspace served longest ago goes first. */
  served: number;
}

interface Waiter {
  tenant: Tenant;
  enqueued: number;
  timer: NodeJS.Timeout;
  grant(g: Grant): void;
  give(result: false | Error): void;
}

export class FairQueue {
  private readonly tenants = new Map<string, Tenant>();
  private readonly principals = new Map<string, Principal>();
  private readonly maxRunning: number;
  private running = 0;
  private turn = 0;
  private closed = false;

  constructor(private readonly opts: FairQueueOptions) {
    if (!(opts.capacity >= 1) || !(opts.maxQueuedPerWorkspace >= 0)) {
      throw new RangeError('FairQueue: capacity must be at least 1 and maxQueuedPerWorkspace at least 0');
    }
    this.maxRunning = Math.max(1, Math.min(opts.capacity, opts.maxRunningPerWorkspace ?? opts.capacity));
  }

  get capacity(): number {
    return this.opts.capacity;
  }

  /**
   * A slot for a run of `workspaceId` of `principalId` (by default the workspace is its own principal): at once,
   * after its turn, `false` when `maxWaitMs` passed first, or a rejection (StfRuntimeBusy when the workspace's queue
   * is full, an Error once closed).
   */
  acquire(workspaceId: string | null | undefined, maxWaitMs: number, principalId?: string | null): Promise<Grant | false> {
    if (this.closed) return Promise.reject(new Error('the runtime is closed'));
    const key = workspaceId ?? NO_WORKSPACE;
    const t = this.tenant(key, principalId ?? `ws:${key}`);
    const enqueued = performance.now();
    // The pump leaves no waiter that could run, so a free slot here is free for this run.
    if (t.waiters.length === 0 && this.canRun(t)) return Promise.resolve(this.grant(t, enqueued));
    if (t.waiters.length >= this.opts.maxQueuedPerWorkspace) {
      this.tidy(t);
      return Promise.reject(
        new StfRuntimeBusy(
          `This workspace already has ${t.waiters.length} STF runs waiting for one of the ${this.opts.capacity} ${this.opts.slotName}`,
          `at most ${this.opts.maxQueuedPerWorkspace} may wait; retry when some have finished`,
        ),
      );
    }
    return new Promise<Grant | false>((resolve, reject) => {
      const w: Waiter = {
        tenant: t,
        enqueued,
        timer: setTimeout(() => this.drop(w, false), Math.max(0, Math.min(maxWaitMs, 2 ** 31 - 1))),
        grant: resolve,
        give: (result) => (result === false ? resolve(false) : reject(result)),
      };
      t.waiters.push(w);
    });
  }

  stats(): FairQueueStats {
    const all: FairQueueStats = { running: this.running, waiting: 0, workspaces: {}, principals: {} };
    for (const t of this.tenants.values()) {
      all.waiting += t.waiters.length;
      all.workspaces[t.key] = { running: t.running, waiting: t.waiters.length };
      const p = all.principals[t.principal.key] ?? { running: 0, waiting: 0 };
      all.principals[t.principal.key] = p;
      p.running += t.running;
      p.waiting += t.waiters.length;
    }
    return all;
  }

  /** Refuses new runs and rejects the waiting ones; runs in progress release their slots as they end. */
  close(error: Error = new Error('the runtime is closed')): void {
    this.closed = true;
    for (const t of this.tenants.values()) for (const w of [...t.waiters]) this.drop(w, error);
  }

  private tenant(key: string, principal: string): Tenant {
    let t = this.tenants.get(key);
    if (!t) {
      let p = this.principals.get(principal);
      if (!p) {
        p = { key: principal, running: 0, tenants: 0, served: 0 };
        this.principals.set(principal, p);
      }
      p.tenants++;
      t = { key, principal: p, running: 0, waiters: [], served: 0 };
      this.tenants.set(key, t);
    }
    return t;
  }

  private canRun(t: Tenant): boolean {
    return this.running < this.opts.capacity && t.principal.running < this.maxRunning;
  }

  private grant(t: Tenant, enqueued: number): Grant {
    this.running++;
    t.running++;
    t.principal.running++;
    t.served = t.principal.served = ++this.turn;
    let released = false;
    return {
      waitedMs: performance.now() - enqueued,
      release: () => {
        if (released) return;
        released = true;
        this.running--;
        t.running--;
        t.principal.running--;
        this.pump();
        this.tidy(t);
      },
    };
  }

  /** Hands free slots to waiters, one at a time, each to the workspace that comes first. */
  private pump(): void {
    for (;;) {
      let next: Tenant | undefined;
      for (const t of this.tenants.values()) {
        if (t.waiters.length > 0 && this.canRun(t) && (next === undefined || before(t, next))) next = t;
      }
      if (!next) return;
      const w = next.waiters.shift()!;
      clearTimeout(w.timer);
      w.grant(this.grant(next, w.enqueued));
    }
  }

  private drop(w: Waiter, result: false | Error): void {
    const i = w.tenant.waiters.indexOf(w);
    if (i < 0) return;
    w.tenant.waiters.splice(i, 1);
    clearTimeout(w.timer);
    w.give(result);
    this.tidy(w.tenant);
  }

  /** Forgets a workspace (and its principal) with nothing running or waiting, so the maps hold only active ones. */
  private tidy(t: Tenant): void {
    if (t.running !== 0 || t.waiters.length !== 0 || this.tenants.get(t.key) !== t) return;
    this.tenants.delete(t.key);
    if (--t.principal.tenants === 0) this.principals.delete(t.principal.key);
  }
}

/** The principal with fewer runs in progress first (among equals, served longest ago), then its workspaces likewise. */
function before(a: Tenant, b: Tenant): boolean {
  const p = a.principal;
  const q = b.principal;
  if (p !== q) return p.running !== q.running ? p.running < q.running : p.served < q.served;
  return a.running !== b.running ? a.running < b.running : a.served < b.served;
}
