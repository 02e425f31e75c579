import { createHash, timingSafeEqual } from 'node:crypto';
import { ChannelListener } from '@wds/cache';
import { FairAdmission } from '@wds/fair-admission';
import { type SqlCaller, type WorkspaceSql, capturedImagesSql } from '@wds/workspace-sql';
import type pg from 'pg';
import type { ServerMessage } from './messages.js';

/**
 * The channel row capture notifies (migrations 0016_row_changes, 0017_row_capture_hardening): payload
 * `<workspace id>:<batch>:<unix seconds>:<mac>`, the MAC keyed with platform.row_capture_key (batchMac). Any session
 * may NOTIFY on any channel: a payload without the right MAC is not the capture's and is ignored, and one older than
 * NOTIFY_MAX_AGE_S (a genuine one replayed later) too.
 */
export const ROW_CHANGES_CHANNEL = 'wds_row_changes';

/** Close codes a subscriber may be ended with (RFC 6455 §7.4; 4xxx are the application's). */
export const CLOSE = {
  /** The server is shutting down. */
  goingAway: 1001,
  /**
   * Events may have been missed (the database connection was lost, a batch was pruned before it was read, a delivery
   * or this subscriber's policy check failed): reconnect and read again.
   */
  interrupted: 1012,
  /** Messages piled up beyond the connection's buffer (REALTIME_MAX_BUFFER_BYTES), or the workspace's backlog overflowed. */
  tooSlow: 1013,
  /** The credential expired, or the user is no longer a member. */
  revoked: 4403,
} as const;

/** One open subscription (a WebSocket), as the hub sees it. */
export interface RealtimeSubscriber {
  readonly workspaceId: string;
  readonly userId: string;
  /** The tables it wants (logical names); null: every table. */
  tables: ReadonlySet<string> | null;
  /** Whether it may still receive the workspace's events (a member; the credential alive); asked before each delivery. */
  allowed(): Promise<boolean>;
  /** One message, as JSON text (serialised once for all of a user's connections). */
  send(text: string): void;
  close(code: number, reason: string): void;
}

export interface RealtimeHubOptions {
  /** Where to LISTEN (the service's database); without it nothing is delivered. */
  databaseUrl: string | undefined;
  /** The service pool: reads the notifications' key (at start) and the captured rows. */
  db: pg.Pool;
  /** Applies each recipient's select policy to the captured rows (visibleRowsFor: all of a table's at once). */
  sql: Pick<WorkspaceSql, 'visibleRows'> & Partial<Pick<WorkspaceSql, 'visibleRowsFor'>>;
  log?: (msg: string, err?: unknown) => void;
  /** Notified batches a workspace may have waiting; beyond that its subscribers are closed (CLOSE.tooSlow). */
  maxPendingBatches?: number;
  /** Captured rows read (and checked against policies) at a time. */
  chunkRows?: number;
  /** Workspaces whose batches are delivered at the same time (each delivery holds a service and a workspace connection). */
  concurrency?: number;
  /**
   * How long one run of policy checks waits for the workspace's own SQL connections (default 2 s). A workspace whose
   * statements keep them all busy longer has its subscribers closed (1012) rather than hold a delivery slot — which
   * every workspace shares — for its SQL_ACQUIRE_TIMEOUT_MS.
   */
  checkWaitMs?: number;
}

interface CapturedRow {
  id: string;
  table_name: string;
  op: 'insert' | 'update' | 'delete';
  row: string | null;
  old: string | null;
  /** The image was too long to send: it goes by reference (its id). */
  row_truncated: boolean;
  size: string;
}

/** Image bytes one chunk of a batch reads at most (one longer row is read alone). */
const CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Work a workspace does before it yields its slot to the next waiting one: policy checks (visibleRows queries, one
 * per recipient user and run of one operation; a chunk nobody had to check counts as one). Counting chunks alone
 * would let a chunk of alternating operations, or many users, hold the slot for thousands of queries.
 */
const TURN = 20;

/** Batches remembered (queued or delivered), in all: a genuine notification replayed while fresh is not delivered again. */
const RECENT_BATCHES = 100_000;

/** How far a notification's time may be from the database's now (its clock, as measured at start). */
const NOTIFY_MAX_AGE_S = 120;

/** Why a subscriber is closed with CLOSE.interrupted. */
const MISSED = {
  policy: 'could not check a change against your policies; reconnect and read again',
  allowed: 'could not check your access to this workspace; reconnect and read again',
  delivery: 'changes could not be delivered; reconnect and read again',
  busy: "the workspace's database connections were all busy; reconnect and read again",
  pruned: 'changes were missed; reconnect and read again',
} as const;

/** A workspace's SQL connections stayed busy past checkWaitMs: its delivery gives up (drain). */
class WorkspaceBusy extends Error {}

/** What is left of a workspace's turn (see TURN). */
interface Turn {
  left: number;
}

/**
 * The MAC row capture appends to a notification: the first 32 hex digits of SHA-256 over
 * `<key>:<workspace id>:<batch>` (UTF-8), as the capture function computes it in PostgreSQL.
 */
export function batchMac(key: string, workspaceId: string, batch: string, at: string): string {
  return createHash('sha256').update(`${key}:${workspaceId}:${batch}:${at}`, 'utf8').digest('hex').slice(0, 32);
}

/**
 * The workspace and batch of a notification, if it is well formed, signed with `key`, and sent within
 * NOTIFY_MAX_AGE_S of `nowS` (the database's clock); null otherwise.
 */
function verified(key: string, payload: string, nowS: number): { workspaceId: string; batch: string } | null {
  const [workspaceId, batch, at, mac, ...rest] = payload.split(':');
  if (rest.length > 0 || !workspaceId || !batch || !at || !mac || !/^\d{1,19}$/.test(batch) || !/^\d{1,12}$/.test(at) || !/^[0-9a-f]{32}$/.test(mac)) return null;
  // Constant time: how much of a guess matched must not show in how long it takes to be refused.
  if (!timingSafeEqual(Buffer.from(mac), Buffer.from(batchMac(key, workspaceId, batch, at)))) return null;
  return Math.abs(nowS - Number(at)) <= NOTIFY_MAX_AGE_S ? { workspaceId, batch } : null;
}

const callerOf = (workspaceId: string, userId: string): SqlCaller => ({
  workspaceId,
  ddlGroupId: null,
  isAdmin: false,
  subject: { kind: 'user', userId },
});

/**
 * Policy-filtered realtime. Every process LISTENs for captured batches; a batch of a workspace with subscribers in
 * this process is read (in chunks) and, for each subscribed user, filtered by that user's select policy in
 * PostgreSQL (WorkspaceSql.visibleRows) before anything is sent: a row they cannot select never reaches them, and
 * what reaches them is the row as their own read would show it. An update that takes a row out of someone's view is
 * a `RowDeleted` for them. Batches of one workspace are delivered one after another in commit order; workspaces go
 * on independently.
 */
export class RealtimeHub {
  private readonly subscribers = new Map<string, Set<RealtimeSubscriber>>();
  /** Per workspace: the batches notified and not yet delivered, each with how far it got (the last row id sent). */
  private readonly pending = new Map<string, { batch: string; after: string }[]>();
  private readonly listener: ChannelListener;
  private readonly maxPending: number;
  private readonly chunk: number;
  private readonly idle = new Set<() => void>();
  /**
   * The delivery slots (`concurrency`), one per workspace at a time: a freed slot goes to the waiting workspace served
   * longest ago.
   */
  private readonly slots: FairAdmission;
  private readonly checkWaitMs: number;
  /** platform.row_capture_key, read at start: without it no notification can be trusted, and nothing is delivered. */
  private key: string | undefined;
  /**
   * The batches notified lately, oldest first (at most RECENT_BATCHES): their numbers alone, since every batch comes
   * from one sequence (platform.row_change_batches) and a notification's workspace is covered by its MAC. (As
   * `<workspace>:<batch>` strings they took about 200 bytes each, 20 MB at the bound; a soak found them.)
   */
  private readonly recent = new Set<number>();
  /** The database's clock minus this process's, in ms (measured at start): notifications carry the database's time. */
  private skewMs = 0;
  private heardCount = 0;

  constructor(private readonly opts: RealtimeHubOptions) {
    this.maxPending = opts.maxPendingBatches ?? 10_000;
    this.chunk = opts.chunkRows ?? 500;
    this.slots = new FairAdmission({ capacity: opts.concurrency ?? 4, maxRunningPerKey: 1 });
    this.checkWaitMs = opts.checkWaitMs ?? 2000;
    this.listener = new ChannelListener(opts.databaseUrl, ROW_CHANGES_CHANNEL, {
      name: 'wds-realtime',
      onMessage: (payload) => this.notified(payload),
      // Whatever was committed while nobody listened is unknown: every subscriber must read again.
      onDown: (err) => {
        opts.log?.('realtime listener lost; subscribers are closed until it reconnects', err);
        this.closeAll(CLOSE.interrupted, 'realtime feed interrupted; reconnect and read again');
      },
      onUp: (again) => again && opts.log?.('realtime listener reconnected'),
    });
  }

  /** Whether events are flowing (new subscribers are refused while not). */
  get healthy(): boolean {
    return this.listener.healthy && this.key !== undefined;
  }

  /** Notifications heard on ROW_CHANGES_CHANNEL so far, forged and stale ones included (tests wait for theirs on it). */
  get heard(): number {
    return this.heardCount;
  }

  get size(): number {
    let n = 0;
    for (const set of this.subscribers.values()) n += set.size;
    return n;
  }

  /** Reads the notifications' key, then listens (so no notification arrives before it can be checked). */
  async start(): Promise<void> {
    try {
      const before = Date.now();
      const { rows } = await this.opts.db.query<{ key: string; now_ms: number }>(
        'SELECT key, extract(epoch FROM clock_timestamp())::float8 * 1000 AS now_ms FROM platform.row_capture_key',
      );
      if (rows.length !== 1 || !rows[0]?.key) throw new Error(`platform.row_capture_key holds ${rows.length} keys, not one`);
      this.skewMs = Number(rows[0].now_ms) - (before + Date.now()) / 2;
      this.key = rows[0].key;
    } catch (err) {
      // Unhealthy rather than down: the service runs, and realtime refuses subscribers (503) instead of sending nothing.
      this.opts.log?.('realtime disabled: the row capture key (platform.row_capture_key) could not be read', err);
    }
    await this.listener.start();
  }

  async stop(): Promise<void> {
    await this.listener.stop();
    this.closeAll(CLOSE.goingAway, 'server shutting down');
  }

  /** The users subscribed to a workspace in this process (none: nothing to tell them). */
  usersOf(workspaceId: string): string[] {
    return [...new Set([...(this.subscribers.get(workspaceId) ?? [])].map((s) => s.userId))];
  }

  /**
   * A message that is no row change (a new SQL proposal) for the workspace's subscribers among `userIds`, each asked
   * `allowed()` first like before a row delivery. Serialised once.
   */
  async notice(workspaceId: string, userIds: ReadonlySet<string>, message: ServerMessage): Promise<void> {
    const text = JSON.stringify(message);
    const targets = [...(this.subscribers.get(workspaceId) ?? [])].filter((s) => userIds.has(s.userId));
    await Promise.all(
      targets.map(async (s) => {
        if (await s.allowed().catch(() => false)) s.send(text);
      }),
    );
  }

  /** Adds a subscriber; the returned function removes it. */
  add(sub: RealtimeSubscriber): () => void {
    const set = this.subscribers.get(sub.workspaceId) ?? new Set<RealtimeSubscriber>();
    this.subscribers.set(sub.workspaceId, set);
    set.add(sub);
    return () => this.remove(sub);
  }

  private remove(sub: RealtimeSubscriber): void {
    const s = this.subscribers.get(sub.workspaceId);
    if (!s?.delete(sub) || s.size > 0) return;
    this.subscribers.delete(sub.workspaceId);
  }

  /** Ends a subscription from the hub's side (whether or not its `close` removes it too). */
  private end(sub: RealtimeSubscriber, code: number, reason: string): void {
    this.remove(sub);
    sub.close(code, reason);
  }

  /** Ends every subscription of a workspace. */
  private endAll(workspaceId: string, code: number, reason: string): void {
    for (const s of [...(this.subscribers.get(workspaceId) ?? [])]) this.end(s, code, reason);
  }

  /** Resolves once every batch notified so far has been delivered (tests, shutdown). */
  settled(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((done) => this.idle.add(done));
  }

  private closeAll(code: number, reason: string): void {
    for (const workspaceId of [...this.subscribers.keys()]) this.endAll(workspaceId, code, reason);
  }

  private notified(payload: string): void {
    this.heardCount++;
    // A forged notification (another workspace's batch, a flood to overflow the backlog) is not signed: ignored.
    const n = this.key === undefined ? null : verified(this.key, payload, (Date.now() + this.skewMs) / 1000);
    // Remembered whether or not anyone here follows the workspace yet: a replay must not reach who subscribes later.
    if (!n || !this.firstTime(n.batch) || !this.subscribers.has(n.workspaceId)) return;
    const { workspaceId, batch } = n;
    const queue = this.pending.get(workspaceId);
    if (queue) {
      if (queue.length >= this.maxPending) {
        // This process cannot keep up with the workspace: its subscribers read again rather than miss events silently.
        this.pending.set(workspaceId, []);
        this.endAll(workspaceId, CLOSE.tooSlow, 'too many changes to follow; reconnect and read again');
        return;
      }
      queue.push({ batch, after: '0' });
      return;
    }
    this.pending.set(workspaceId, [{ batch, after: '0' }]);
    void this.serve(workspaceId);
  }

  /**
   * Whether a workspace's batch is new to this hub, remembering it: a genuine notification replayed (any session may
   * LISTEN, and NOTIFY what it heard) is delivered once — while fresh; a stale one is refused by its time.
   */
  private firstTime(batch: string): boolean {
    const id = Number(batch);
    if (!Number.isSafeInteger(id) || this.recent.has(id)) return false;
    this.recent.add(id);
    if (this.recent.size > RECENT_BATCHES) this.recent.delete(this.recent.values().next().value as number);
    return true;
  }

  /** Delivers a workspace's batches, a turn per delivery slot, until none are pending; between turns others go. */
  private async serve(workspaceId: string): Promise<void> {
    for (let more = true; more; ) {
      const slot = await this.slots.acquire(workspaceId);
      try {
        more = await this.drain(workspaceId);
      } finally {
        slot.release();
      }
    }
  }

  /**
   * Delivers a workspace's batches one at a time, in the order they were notified, holding one delivery slot for at
   * most a TURN of work: a busy workspace (one statement of a million rows, many subscribed users) then waits behind
   * the others, and goes on where it stopped, so none starves another's realtime. True when batches are left for
   * another turn.
   */
  private async drain(workspaceId: string): Promise<boolean> {
    const turn: Turn = { left: TURN };
    while (turn.left > 0) {
      const next = this.pending.get(workspaceId)?.[0];
      if (next === undefined) break;
      try {
        const after = await this.deliver(workspaceId, next.batch, next.after, turn);
        if (after === null) this.pending.get(workspaceId)?.shift();
        else next.after = after;
      } catch (err) {
        // The rest of the batch is lost (the outbox could not be read, its connections stayed busy): its subscribers
        // must not go on unaware.
        const busy = err instanceof WorkspaceBusy;
        this.opts.log?.(busy ? 'realtime delivery gave up: the workspace kept its SQL connections busy' : 'realtime delivery failed', busy ? undefined : err);
        this.pending.get(workspaceId)?.shift();
        this.endAll(workspaceId, CLOSE.interrupted, busy ? MISSED.busy : MISSED.delivery);
        turn.left--;
      }
    }
    if ((this.pending.get(workspaceId)?.length ?? 0) > 0) return true;
    this.pending.delete(workspaceId);
    if (this.pending.size === 0) {
      for (const done of this.idle) done();
      this.idle.clear();
    }
    return false;
  }

  /**
   * A batch from row `after` on, while the turn lasts (at least one run of an operation); where it stopped (null: the
   * batch is done).
   */
  private async deliver(workspaceId: string, batch: string, after: string, turn: Turn): Promise<string | null> {
    while (turn.left > 0) {
      const recipients = this.subscribers.get(workspaceId);
      if (!recipients || recipients.size === 0) return null;
      // A chunk is at most `chunk` rows and CHUNK_BYTES of images (at least one row): memory stays bounded whatever
      // the statement wrote.
      const { rows } = await this.opts.db.query<CapturedRow & { running: string }>(
        `SELECT c.* FROM (
           SELECT l.*, sum(l.size) OVER (ORDER BY l.id) AS running FROM (
             SELECT rc.id, rc.table_name, rc.op, ${capturedImagesSql()}
               FROM platform.row_changes rc
              WHERE rc.batch = $1 AND rc.workspace_id = $2 AND rc.id > $3
              ORDER BY rc.id LIMIT $4) l) c
          WHERE c.running <= $5 OR c.running = c.size
          ORDER BY c.id`,
        [batch, workspaceId, after, this.chunk, CHUNK_BYTES],
      );
      if (rows.length === 0) {
        // A notified batch has rows: none at all means they were pruned (ROW_CHANGE_RETENTION_MS) before this process
        // got to them, and its subscribers missed them.
        if (after === '0') this.endAll(workspaceId, CLOSE.interrupted, MISSED.pruned);
        return null;
      }
      const left = turn.left;
      // One operation at a time (a statement's soft deletes come with its updates); the turn may end between two.
      for (let i = 0; i < rows.length; ) {
        let j = i + 1;
        while (j < rows.length && rows[j]?.op === rows[i]?.op) j++;
        await this.fanOut(workspaceId, rows.slice(i, j), [...recipients], turn);
        after = String((rows[j - 1] as CapturedRow).id);
        i = j;
        if (turn.left <= 0 && i < rows.length) return after;
      }
      if (turn.left === left) turn.left--;
    }
    return after;
  }

  /**
   * One chunk of a batch (one table, one operation) to every subscriber of its table, each by their own policy. What
   * fails for one subscriber (their access or their policy could not be checked) ends their subscriptions only.
   */
  private async fanOut(workspaceId: string, rows: CapturedRow[], recipients: RealtimeSubscriber[], turn: Turn): Promise<void> {
    const table = (rows[0] as CapturedRow).table_name;
    const byUser = new Map<string, RealtimeSubscriber[]>();
    for (const s of recipients) {
      if (s.tables && !s.tables.has(table)) continue;
      let allowed: boolean;
      try {
        allowed = await s.allowed();
      } catch (err) {
        this.opts.log?.('realtime access check failed', err);
        this.end(s, CLOSE.interrupted, MISSED.allowed);
        continue;
      }
      if (!allowed) {
        this.end(s, CLOSE.revoked, 'no longer allowed to follow this workspace');
        continue;
      }
      const list = byUser.get(s.userId);
      if (list) list.push(s);
      else byUser.set(s.userId, [s]);
    }
    // Every subscribed user at once, in one query a run (visibleRowsFor); when that fails (one user's policy cannot be
    // evaluated over these rows, say), one by one, so that only whose it is misses the change.
    // The workspace's own connections are waited for at most checkWaitMs in all: the slot is everyone's.
    const wait = AbortSignal.timeout(this.checkWaitMs);
    const busy = (err: unknown) => err === wait.reason || (err as { code?: unknown })?.code === 'TOO_MANY_REQUESTS';
    let together: Map<string, ServerMessage[]> | undefined;
    const many = this.opts.sql.visibleRowsFor?.bind(this.opts.sql);
    if (many && byUser.size > 1) {
      const users = [...byUser.keys()];
      try {
        together = await this.messagesOf(users, table, rows, turn, (images) => many(workspaceId, users, table, images, wait));
      } catch (err) {
        if (busy(err)) throw new WorkspaceBusy();
        this.opts.log?.('realtime policy check of all subscribers failed; checking them one by one', err);
      }
    }
    for (const [userId, subs] of byUser) {
      let messages: ServerMessage[];
      try {
        messages = together?.get(userId) ?? (await this.messagesFor(callerOf(workspaceId, userId), table, rows, turn, wait));
      } catch (err) {
        if (busy(err)) throw new WorkspaceBusy();
        // Their policy does not evaluate on these rows (a cast error, say): they cannot know what they missed.
        this.opts.log?.('realtime policy check failed', err);
        for (const s of subs) this.end(s, CLOSE.interrupted, MISSED.policy);
        continue;
      }
      for (const m of messages) {
        let text: string;
        try {
          text = JSON.stringify(m);
        } catch (err) {
          this.opts.log?.('realtime message not serialisable', err);
          continue;
        }
        for (const s of subs) s.send(text);
      }
    }
  }

  /** What one user may learn of a chunk: the rows they can select, in the batch's order. */
  private async messagesFor(caller: SqlCaller, table: string, rows: CapturedRow[], turn: Turn, wait?: AbortSignal): Promise<ServerMessage[]> {
    const userId = caller.subject.userId as string;
    const one = async (images: string[]) => new Map([[userId, await this.opts.sql.visibleRows(caller, table, images, wait)]]);
    return (await this.messagesOf([userId], table, rows, turn, one)).get(userId) ?? [];
  }

  /**
   * What each of `userIds` may learn of a chunk, in the batch's order, with `visible` telling which images each may
   * select (one query for them all, or one per user): inserts and updates they can see as the row; an update whose
   * new row they cannot see but whose old one they could, and a delete they could see, as a RowDeleted.
   */
  private async messagesOf(
    userIds: string[],
    table: string,
    rows: CapturedRow[],
    turn: Turn,
    visible: (images: string[]) => Promise<Map<string, { index: number; row: Record<string, unknown> }[]>>,
  ): Promise<Map<string, ServerMessage[]>> {
    const out = new Map<string, { index: number; message: ServerMessage }[]>(userIds.map((u) => [u, []]));
    const shown = new Map<string, Set<number>>(userIds.map((u) => [u, new Set()]));
    const op = (rows[0] as CapturedRow).op;
    if (op === 'insert' || op === 'update') {
      const withRow = rows.map((r, i) => ({ i, image: r.row })).filter((x): x is { i: number; image: string } => x.image !== null);
      turn.left--;
      const seen = await visible(withRow.map((x) => x.image));
      for (const userId of userIds) {
        for (const v of seen.get(userId) ?? []) {
          const i = (withRow[v.index] as { i: number }).i;
          shown.get(userId)?.add(i);
          const type = op === 'insert' ? 'RowInserted' : 'RowUpdated';
          // A row too long to send goes by reference: its id, for the client to read it.
          const data = rows[i]?.row_truncated ? { table_name: table, row: { id: v.row.id ?? null }, truncated: true as const } : { table_name: table, row: v.row };
          out.get(userId)?.push({ index: i, message: { type, data } });
        }
      }
    }
    const withOld = op === 'insert' ? [] : rows.map((r, i) => ({ i, image: r.old })).filter((x): x is { i: number; image: string } => x.image !== null);
    if (withOld.length > 0) {
      turn.left--;
      const seen = await visible(withOld.map((x) => x.image));
      for (const userId of userIds) {
        for (const v of seen.get(userId) ?? []) {
          const i = (withOld[v.index] as { i: number }).i;
          // An update whose new row they see is a RowUpdated (above); one whose new row they cannot see, but whose old
          // one they could, left their view.
          if (shown.get(userId)?.has(i)) continue;
          out.get(userId)?.push({ index: i, message: { type: 'RowDeleted', data: { table_name: table, id: v.row.id ?? null } } });
        }
      }
    }
    return new Map([...out].map(([userId, list]) => [userId, list.sort((x, y) => x.index - y.index).map((x) => x.message)]));
  }
}
