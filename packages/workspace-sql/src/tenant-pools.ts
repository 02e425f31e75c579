import { ServiceError } from '@wds/errors';
import { AdmissionRefused, FairAdmission, type Grant, type Ticket } from '@wds/fair-admission';
import type pg from 'pg';

/**
 * Connections per workspace, shared by principal. Each workspace's SQL runs on connections logged in as that
 * workspace's own role, so a connection can only ever be reused by the workspace that opened it. The caps
 * (`maxPerWorkspace`, `maxPerWorkspaceShared`) hold for a principal — the user who created the workspaces
 * (principals.ts) — across all of its workspaces together, so one user's load over any number of workspaces gets
 * one fair share; the overall cap (`maxTotal`) is shared in fair turns, first between principals, then between the
 * workspaces of one. One principal's load waits on its own slots, never on another's.
 */
export interface TenantPoolsOptions {
  /**
   * Opens a connected client logged in as the workspace's role (the caller supplies credentials, stream, settings,
   * and a connection timeout: a hanging connect holds its slot until it settles).
   */
  connect(workspaceId: string): Promise<pg.Client>;
  /**
   * Whose share a workspace's connections take (workspacePrincipal; WorkspacePrincipals.of). Without it every
   * workspace is its own principal.
   */
  principalOf?(workspaceId: string): string | Promise<string>;
  /**
   * Connections (= concurrent statements or open STF sessions) one principal may hold across its workspaces.
   * SQL_WORKSPACE_CONNECTIONS.
   */
  maxPerWorkspace: number;
  /**
   * What one principal may hold while another principal is using SQL too (holding or waiting for a connection, or
   * having asked for one within `contentionWindowMs`): its statements share the database's CPUs with theirs, and
   * PostgreSQL has no priorities, so a principal alone gets `maxPerWorkspace` and one among others this many.
   * Statements already running are not stopped; new ones wait. SQL_WORKSPACE_CONNECTIONS_SHARED; default
   * `maxPerWorkspace` (no difference).
   */
  maxPerWorkspaceShared?: number;
  /** How recent another principal's last acquire must be for it to count as using SQL. Default 2000 ms. */
  contentionWindowMs?: number;
  /** Open connections across all workspaces: leased, idle and connecting. SQL_POOL_MAX. */
  maxTotal: number;
  /** Waiting acquires one workspace may have; one more is refused at once. SQL_WORKSPACE_QUEUE. */
  maxQueuePerWorkspace: number;
  /** How long an acquire may wait (in the queue and while connecting) before it is refused. SQL_ACQUIRE_TIMEOUT_MS. */
  acquireTimeoutMs: number;
  /** Idle connections are closed after this long. */
  idleTimeoutMs: number;
}

export interface Lease {
  readonly client: pg.Client;
  /**
   * Returns the connection; later calls do nothing. With `broken`, after any error seen on the client, or when the
   * client is not back outside a transaction, it is closed instead. Release only when no query is running on it.
   */
  release(broken?: boolean): void;
}

export interface WorkspacePoolStats {
  leased: number;
  idle: number;
  connecting: number;
  waiting: number;
}

export interface TenantPoolsStats extends WorkspacePoolStats {
  /** leased + idle + connecting; never above `maxTotal`. */
  open: number;
  workspaces: Record<string, WorkspacePoolStats>;
  /** The same summed over each principal's workspaces (only principals with a workspace listed above). */
  principals: Record<string, WorkspacePoolStats>;
}

interface Tenant {
  id: string;
  /** Whose share its connections take (fixed while the workspace is remembered). */
  principal: string;
  leased: number;
  connecting: number;
  /** Least recently used first; reuse takes the last. */
  idle: Conn[];
}

interface Conn {
  client: pg.Client;
  tenant: Tenant;
  /** `new`: just opened, about to be lent or parked. */
  state: 'new' | 'leased' | 'idle' | 'closed';
  /** An error or an unexpected end was seen: never reuse. */
  broken: boolean;
  idleTimer?: NodeJS.Timeout;
}

interface Waiter {
  tenant: Tenant;
  /** Admitted, its connection being opened. */
  connecting: boolean;
  settled: boolean;
  resolve(lease: Lease): void;
  reject(err: unknown): void;
  timer?: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** Its place in the admission queue while it waits. */
  ticket?: Ticket;
}

/**
 * Admission is FairAdmission over connections held (leased or connecting): keys are workspaces, groups their
 * principals, capacity `maxTotal`. Idle connections hold no place: one is reused by its own workspace, or closed to
 * make room for another's.
 */
export class TenantPools {
  private readonly tenants = new Map<string, Tenant>();
  /** Every idle connection, least recently used first: the one to close when another workspace needs a slot. */
  private readonly idle = new Set<Conn>();
  private readonly admission: FairAdmission;
  private open = 0;
  private closed = false;

  constructor(private readonly opts: TenantPoolsOptions) {
    if (opts.maxPerWorkspace < 1 || opts.maxTotal < 1 || opts.maxQueuePerWorkspace < 0) {
      throw new RangeError('TenantPools: maxPerWorkspace and maxTotal must be at least 1, maxQueuePerWorkspace at least 0');
    }
    const shared = opts.maxPerWorkspaceShared;
    this.admission = new FairAdmission({
      capacity: opts.maxTotal,
      maxWaitingPerKey: opts.maxQueuePerWorkspace,
      maxRunningPerGroup: opts.maxPerWorkspace,
      ...(shared === undefined ? {} : { contention: { maxRunningPerGroup: shared, windowMs: opts.contentionWindowMs ?? 2000 } }),
    });
  }

  /** A connection of the workspace: at once, after waiting its turn, or a 429 ServiceError (queue full, timeout). */
  acquire(workspaceId: string, signal?: AbortSignal): Promise<Lease> {
    const principal = this.opts.principalOf ? this.opts.principalOf(workspaceId) : workspaceId;
    if (typeof principal === 'string') return this.enqueue(workspaceId, principal, signal);
    return principal.then((key) => this.enqueue(workspaceId, key, signal));
  }

  private enqueue(workspaceId: string, principal: string, signal: AbortSignal | undefined): Promise<Lease> {
    if (this.closed) return Promise.reject(closedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    const t = this.tenant(workspaceId, principal);
    return new Promise<Lease>((resolve, reject) => {
      const w: Waiter = { tenant: t, connecting: false, settled: false, resolve, reject };
      w.timer = setTimeout(() => this.settle(w, timeoutError(w.connecting, this.opts.acquireTimeoutMs)), this.opts.acquireTimeoutMs);
      if (signal) {
        w.signal = signal;
        w.onAbort = () => this.settle(w, signal.reason);
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      // Served at once when it can be; refused at once when its workspace's queue is full.
      w.ticket = this.admission.enter(workspaceId, { group: t.principal }, {
        granted: (grant) => this.serve(w, grant),
        refused: (err) => this.settle(w, refusal(err, this.opts)),
      });
    });
  }

  stats(): TenantPoolsStats {
    const all: TenantPoolsStats = { open: this.open, leased: 0, idle: 0, connecting: 0, waiting: 0, workspaces: {}, principals: {} };
    for (const t of this.tenants.values()) {
      const s = { leased: t.leased, idle: t.idle.length, connecting: t.connecting, waiting: this.admission.load(t.id).waiting };
      all.workspaces[t.id] = s;
      const p = all.principals[t.principal] ?? { leased: 0, idle: 0, connecting: 0, waiting: 0 };
      all.principals[t.principal] = p;
      p.leased += s.leased;
      p.idle += s.idle;
      p.connecting += s.connecting;
      p.waiting += s.waiting;
      all.leased += s.leased;
      all.idle += s.idle;
      all.connecting += s.connecting;
      all.waiting += s.waiting;
    }
    return all;
  }

  /** Refuses new acquires, rejects waiters and closes idle connections; leased ones close as they are released. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.admission.close();
    await Promise.all([...this.idle].map((c) => this.discard(c)));
  }

  /**
   * A waiter admitted (FairAdmission: when slots are scarce, a waiter of the principal holding the fewest connections,
   * among equals the one served longest ago, and of its workspaces likewise — so a principal at its fair share keeps
   * reusing its own connections instead of trading them, each trade being a close and a new login): its workspace's
   * most recently used idle connection, else a new one, closing another workspace's least recently used idle one
   * first when all `maxTotal` are open.
   */
  private serve(w: Waiter, grant: Grant): void {
    const t = w.tenant;
    const own = t.idle.at(-1);
    if (own) {
      this.unpark(own);
      this.lend(own, w, grant);
      return;
    }
    // At the cap, the least recently used idle connection (another workspace's) makes room.
    const room = this.open >= this.opts.maxTotal ? this.discard(this.idle.values().next().value!) : undefined;
    this.openFor(t, w, grant, room);
  }

  /** Opens a connection for an admitted waiter; `room` is the close of an evicted one, awaited first. */
  private openFor(t: Tenant, w: Waiter, grant: Grant, room: Promise<void> | undefined): void {
    t.connecting++;
    this.open++;
    w.connecting = true;
    void (async () => {
      let client: pg.Client;
      try {
        await room;
        client = await this.opts.connect(t.id);
      } catch (err) {
        t.connecting--;
        this.open--;
        this.settle(w, unreachableError(err));
        grant.release();
        this.tidy(t);
        return;
      }
      t.connecting--;
      const conn = this.adopt(client, t);
      if (this.closed) {
        void this.discard(conn);
        this.settle(w, closedError());
        grant.release();
      } else if (!w.settled) {
        this.lend(conn, w, grant);
      } else {
        // Its acquire gave up (timeout, abort) meanwhile: the connection serves the next one.
        this.park(conn);
        grant.release();
      }
      this.tidy(t);
    })();
  }

  /** Listens for errors from the first moment: a dead backend must never become an unhandled 'error' event. */
  private adopt(client: pg.Client, tenant: Tenant): Conn {
    const conn: Conn = { client, tenant, state: 'new', broken: false };
    const lost = () => {
      conn.broken = true;
      if (conn.state !== 'idle') return; // leased: closed on release; closed: nothing to do
      void this.discard(conn);
      this.admission.pump();
    };
    client.on('error', lost);
    client.on('end', lost);
    // A FATAL error (e.g. pg_terminate_backend) fails the running query before the socket closes: never reuse it.
    client.connection.on('errorMessage', (e: { severity?: string }) => {
      if (e.severity === 'FATAL' || e.severity === 'PANIC') conn.broken = true;
    });
    return conn;
  }

  /** Lends a connection to an admitted waiter; the admission's place is held until the lease is released. */
  private lend(conn: Conn, w: Waiter, grant: Grant): void {
    const t = conn.tenant;
    conn.state = 'leased';
    t.leased++;
    let released = false;
    const lease: Lease = {
      client: conn.client,
      release: (broken = false) => {
        if (released) return;
        released = true;
        t.leased--;
        // A connection left inside a transaction would hand its state to the next statement.
        const reusable = !broken && !conn.broken && !this.closed && conn.client.getTransactionStatus() === 'I';
        if (reusable) this.park(conn);
        else void this.discard(conn);
        grant.release();
        this.tidy(t);
      },
    };
    this.settle(w, null, lease);
  }

  private park(conn: Conn): void {
    conn.state = 'idle';
    conn.tenant.idle.push(conn);
    this.idle.add(conn);
    conn.idleTimer = setTimeout(() => {
      void this.discard(conn);
      this.admission.pump();
    }, this.opts.idleTimeoutMs);
    conn.idleTimer.unref();
  }

  private unpark(conn: Conn): void {
    const idle = conn.tenant.idle;
    idle.splice(idle.indexOf(conn), 1);
    this.idle.delete(conn);
    clearTimeout(conn.idleTimer);
  }

  /** Closes a connection that is idle or was just taken back; resolves when it is gone. */
  private discard(conn: Conn): Promise<void> {
    if (conn.state === 'closed') return Promise.resolve();
    if (conn.state === 'idle') this.unpark(conn);
    conn.state = 'closed';
    this.open--;
    this.tidy(conn.tenant);
    return conn.client.end().catch(() => {});
  }

  /** Ends a waiter exactly once: with the lease, or with `err` (which also takes it out of the queue). */
  private settle(w: Waiter, err: unknown, lease?: Lease): void {
    if (w.settled) return;
    w.settled = true;
    clearTimeout(w.timer);
    if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
    w.ticket?.cancel(err);
    this.tidy(w.tenant);
    if (lease) w.resolve(lease);
    else w.reject(err);
  }

  private tenant(id: string, principal: string): Tenant {
    let t = this.tenants.get(id);
    if (!t) {
      t = { id, principal, leased: 0, connecting: 0, idle: [] };
      this.tenants.set(id, t);
    }
    return t;
  }

  /** Forgets a workspace with nothing open, admitted or waiting, so many workspaces do not accumulate. */
  private tidy(t: Tenant): void {
    if (t.leased + t.connecting + t.idle.length !== 0 || this.tenants.get(t.id) !== t) return;
    const { running, waiting } = this.admission.load(t.id);
    if (running + waiting === 0) this.tenants.delete(t.id);
  }
}

const closedError = () => new ServiceError('SERVICE_UNAVAILABLE', 'The service is shutting down', 'the SQL connection pools are closed');

/** What an admission refusal is for the caller: the queue full, the pools closed; an abort's or timeout's own reason. */
function refusal(err: unknown, o: TenantPoolsOptions): unknown {
  if (!(err instanceof AdmissionRefused)) return err;
  return err.reason === 'full' ? queueFullError(o) : err.reason === 'closed' ? closedError() : timeoutError(false, o.acquireTimeoutMs);
}

const queueFullError = (o: TenantPoolsOptions) =>
  new ServiceError(
    'TOO_MANY_REQUESTS',
    'Too many SQL statements of this workspace are waiting for a connection',
    `at most ${o.maxPerWorkspace} run at a time across the workspaces of its creator (SQL_WORKSPACE_CONNECTIONS) and ${o.maxQueuePerWorkspace} may wait ` +
      '(SQL_WORKSPACE_QUEUE); retry later',
  );

const timeoutError = (connecting: boolean, ms: number) =>
  connecting
    ? new ServiceError('SERVICE_UNAVAILABLE', 'The database is not reachable', `no connection within ${ms} ms (SQL_ACQUIRE_TIMEOUT_MS)`)
    : new ServiceError(
        'TOO_MANY_REQUESTS',
        `No database connection became free within ${ms} ms`,
        "the statements of the workspace's creator (SQL_WORKSPACE_CONNECTIONS at a time) or all workspaces (SQL_POOL_MAX) kept " +
          'every connection busy for SQL_ACQUIRE_TIMEOUT_MS; retry later',
      );

function unreachableError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const e = new ServiceError(
    'SERVICE_UNAVAILABLE',
    'The database is not reachable',
    typeof code === 'string' ? `could not open a connection (${code})` : 'could not open a connection',
  );
  e.cause = err;
  return e;
}
