/**
 * Fair admission to a shared, bounded resource (runtime slots, database connections, workflow executions, delivery
 * slots), in two levels: keys (a workspace) belong to groups (the principal whose share they take: the user who
 * created the workspace; by default a key is its own group). Waiters queue per key, first come first served within
 * it. A free place goes to the group with the fewest grants in progress (among equals the one served longest ago),
 * and of its keys to the one with the fewest likewise: waiting groups take turns, then their keys, so many waiters or
 * many keys of one group cannot starve another. Caps: in all (`capacity`), per key, per group (a number, or read
 * afresh at each pump for caps that depend on who else is active). A wait ends with a grant, or is refused: its
 * key's queue was full, its timeout passed, its signal aborted, the admission was closed.
 *
 * Keys and groups are remembered only while something of theirs runs or waits: a key that comes back counts as never
 * served.
 */

/** Grants in progress and waiters, of a key, a group or all. */
export interface Load {
  running: number;
  waiting: number;
}

export interface GroupLoad extends Load {
  group: string;
}

export interface AdmissionStats extends Load {
  keys: Record<string, Load>;
  groups: Record<string, Load>;
}

export interface FairAdmissionOptions {
  /** Grants in progress at once across every key. Default: no bound. */
  capacity?: number;
  /** Grants one key may hold at once. Default: no bound. */
  maxRunningPerKey?: number;
  /**
   * Grants one group may hold at once, its keys together. A function is asked once per pump for the caps of that
   * pump (a cap that depends on which other groups are active, say). Default: no bound.
   */
  maxRunningPerGroup?: number | (() => (group: GroupLoad) => number);
  /** Waiters one key may have; one more is refused at once (`full`), unless it can be granted at once. Default: no bound. */
  maxWaitingPerKey?: number;
  /**
   * A lower group cap while the resource is contended: a group may hold `maxRunningPerGroup` grants (at most the
   * number above) while another group is active too — holds a grant, waits, or asked within `windowMs` — and the
   * number above while it is alone. For resources whose users share CPUs (database backends, runtime workers), where
   * ordering alone lets a tenant that keeps every place busy delay the next request of a lightly loaded one by a
   * whole run. Grants in progress are not taken back; new ones wait.
   */
  contention?: { maxRunningPerGroup: number; windowMs: number };
}

export interface WaitOptions {
  /** Whose share the key takes; default: the key itself. Fixed by the first wait of a key while it is remembered. */
  group?: string;
  /** How long the wait may last before it is refused (`timeout`). Default: no bound. */
  timeoutMs?: number;
  /** Ends the wait with the signal's reason. */
  signal?: AbortSignal;
}

export interface Grant {
  /** Milliseconds spent waiting. */
  readonly waitedMs: number;
  /** Gives the place back (later calls do nothing). */
  release(): void;
}

/** Why a wait was refused; `load` is the key's (the refused waiter not counted). */
export class AdmissionRefused extends Error {
  constructor(
    readonly reason: 'full' | 'timeout' | 'closed',
    readonly load: Load,
    readonly waitedMs: number,
  ) {
    super(reason === 'full' ? 'too many waiting' : reason === 'timeout' ? 'waited too long' : 'closed');
    this.name = 'AdmissionRefused';
  }
}

/** How a wait ends, exactly once: called synchronously when it does (a grant inside the release that freed it). */
export interface WaitOutcome {
  granted(grant: Grant): void;
  refused(reason: unknown): void;
}

/** A wait in progress. */
export interface Ticket {
  /** Ends the wait with `refused(reason)` if it still waits; otherwise nothing. */
  cancel(reason: unknown): void;
}

interface Group {
  name: string;
  running: number;
  waiting: number;
  /** Its remembered keys. */
  keys: number;
  /** Turn number of its last grant. */
  served: number;
}

interface Key {
  name: string;
  group: Group;
  running: number;
  waiters: Waiter[];
  /** Turn number of its last grant. */
  served: number;
}

interface Waiter {
  key: Key;
  enqueued: number;
  outcome: WaitOutcome;
  done: boolean;
  timer?: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** setTimeout's longest delay; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class FairAdmission {
  private readonly keys = new Map<string, Key>();
  private readonly groups = new Map<string, Group>();
  private running = 0;
  private turn = 0;
  private isClosed = false;
  private pumping = false;
  private again = false;
  /** Group → when it last asked (`contention` only; pruned to its window, oldest first). */
  private readonly lastAsked = new Map<string, number>();

  constructor(private readonly opts: FairAdmissionOptions = {}) {
    const { capacity = Number.POSITIVE_INFINITY, maxRunningPerKey = Number.POSITIVE_INFINITY, maxWaitingPerKey = 0 } = opts;
    if (!(capacity >= 1) || !(maxRunningPerKey >= 1) || !(maxWaitingPerKey >= 0)) {
      throw new RangeError('FairAdmission: capacity and maxRunningPerKey must be at least 1, maxWaitingPerKey at least 0');
    }
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Waits for a place of `key`, telling `outcome` how it ends (synchronously, possibly before this returns). */
  enter(key: string, options: WaitOptions, outcome: WaitOutcome): Ticket {
    const { signal } = options;
    if (this.isClosed) {
      outcome.refused(new AdmissionRefused('closed', this.load(key), 0));
      return IDLE_TICKET;
    }
    if (signal?.aborted) {
      outcome.refused(signal.reason);
      return IDLE_TICKET;
    }
    const k = this.keyOf(key, options.group ?? key);
    this.asked(k.group.name);
    const w: Waiter = { key: k, enqueued: performance.now(), outcome, done: false };
    k.waiters.push(w);
    k.group.waiting++;
    this.pump();
    if (w.done) return IDLE_TICKET;
    if (k.waiters.length > (this.opts.maxWaitingPerKey ?? Number.POSITIVE_INFINITY)) {
      this.drop(w, new AdmissionRefused('full', { running: k.running, waiting: k.waiters.length - 1 }, 0));
      return IDLE_TICKET;
    }
    if (options.timeoutMs !== undefined) {
      const ms = Math.max(0, Math.min(options.timeoutMs, MAX_TIMER_MS));
      w.timer = setTimeout(() => this.drop(w, new AdmissionRefused('timeout', { running: k.running, waiting: k.waiters.length - 1 }, performance.now() - w.enqueued)), ms);
    }
    if (signal) {
      w.signal = signal;
      w.onAbort = () => this.drop(w, signal.reason);
      signal.addEventListener('abort', w.onAbort, { once: true });
    }
    return { cancel: (reason) => this.drop(w, reason) };
  }

  /** A place of `key`: at once, after its turn, or a rejection (AdmissionRefused, or the signal's reason). */
  acquire(key: string, options: WaitOptions = {}): Promise<Grant> {
    return new Promise((granted, refused) => this.enter(key, options, { granted, refused }));
  }

  /**
   * Grants every waiter that can be granted now, one per step, each to the key that comes first. Releases pump by
   * themselves; call it when a cap given as a function may have risen.
   */
  pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        const capacity = this.opts.capacity ?? Number.POSITIVE_INFINITY;
        const perKey = this.opts.maxRunningPerKey ?? Number.POSITIVE_INFINITY;
        const perGroup = this.groupCaps();
        while (!this.isClosed && this.running < capacity) {
          let next: Key | undefined;
          for (const k of this.keys.values()) {
            if (k.waiters.length === 0 || k.running >= perKey || (next !== undefined && !before(k, next))) continue;
            const g = k.group;
            if (g.running < perGroup({ group: g.name, running: g.running, waiting: g.waiting })) next = k;
          }
          if (!next) break;
          this.grant(next.waiters.shift() as Waiter);
        }
      } while (this.again);
    } finally {
      this.pumping = false;
    }
  }

  /** Refuses new waits (`closed`) and ends the waiting ones with `reason`; grants in progress end as they are released. */
  close(reason?: unknown): void {
    this.isClosed = true;
    for (const k of [...this.keys.values()]) {
      for (const w of [...k.waiters]) this.drop(w, reason ?? new AdmissionRefused('closed', { running: k.running, waiting: k.waiters.length - 1 }, 0));
    }
  }

  /** A key's load (zero when nothing of it runs or waits). */
  load(key: string): Load {
    const k = this.keys.get(key);
    return { running: k?.running ?? 0, waiting: k?.waiters.length ?? 0 };
  }

  /** The groups with grants in progress or waiters. */
  activeGroups(): IterableIterator<string> {
    return this.groups.keys();
  }

  stats(): AdmissionStats {
    const all: AdmissionStats = { running: this.running, waiting: 0, keys: {}, groups: {} };
    for (const k of this.keys.values()) {
      all.waiting += k.waiters.length;
      all.keys[k.name] = { running: k.running, waiting: k.waiters.length };
    }
    for (const g of this.groups.values()) all.groups[g.name] = { running: g.running, waiting: g.waiting };
    return all;
  }

  private groupCaps(): (group: GroupLoad) => number {
    const cap = this.opts.maxRunningPerGroup;
    if (typeof cap === 'function') return cap();
    const n = cap ?? Number.POSITIVE_INFINITY;
    const contention = this.opts.contention;
    if (!contention || contention.maxRunningPerGroup >= n) return () => n;
    const shared = Math.max(1, contention.maxRunningPerGroup);
    const active = this.activeCount();
    // A group asked for by the pump is active itself (it waits): contended when any other is active too.
    return (g) => (active - (this.isActive(g.group) ? 1 : 0) > 0 ? shared : n);
  }

  private asked(group: string): void {
    const window = this.opts.contention?.windowMs;
    if (window === undefined) return;
    const now = Date.now();
    this.lastAsked.delete(group); // re-inserted last: the map stays ordered by time, oldest first
    this.lastAsked.set(group, now);
    for (const [g, at] of this.lastAsked) {
      if (now - at < window) break;
      this.lastAsked.delete(g);
    }
  }

  private recentlyAsked(group: string): boolean {
    const at = this.lastAsked.get(group);
    return at !== undefined && Date.now() - at < (this.opts.contention?.windowMs ?? 0);
  }

  private isActive(group: string): boolean {
    return this.groups.has(group) || this.recentlyAsked(group);
  }

  /** Groups holding or waiting for grants, or that asked within the contention window. */
  private activeCount(): number {
    let n = this.groups.size;
    for (const g of this.lastAsked.keys()) if (!this.groups.has(g) && this.recentlyAsked(g)) n++;
    return n;
  }

  private keyOf(name: string, group: string): Key {
    let k = this.keys.get(name);
    if (!k) {
      let g = this.groups.get(group);
      if (!g) {
        g = { name: group, running: 0, waiting: 0, keys: 0, served: 0 };
        this.groups.set(group, g);
      }
      g.keys++;
      k = { name, group: g, running: 0, waiters: [], served: 0 };
      this.keys.set(name, k);
    }
    return k;
  }

  /** Grants a waiter already taken from its queue. */
  private grant(w: Waiter): void {
    const k = w.key;
    this.settle(w);
    this.running++;
    k.running++;
    k.group.running++;
    k.served = k.group.served = ++this.turn;
    let released = false;
    w.outcome.granted({
      waitedMs: performance.now() - w.enqueued,
      release: () => {
        if (released) return;
        released = true;
        this.running--;
        k.running--;
        k.group.running--;
        this.pump();
        this.tidy(k);
      },
    });
  }

  private drop(w: Waiter, reason: unknown): void {
    if (w.done) return;
    const queue = w.key.waiters;
    queue.splice(queue.indexOf(w), 1);
    this.settle(w);
    w.outcome.refused(reason);
    this.tidy(w.key);
  }

  /** Ends a waiter's wait (it has left its queue): its timer and signal listener go. */
  private settle(w: Waiter): void {
    w.done = true;
    w.key.group.waiting--;
    clearTimeout(w.timer);
    if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
  }

  /** Forgets a key (and its group) with nothing running or waiting, so the maps hold only active ones. */
  private tidy(k: Key): void {
    if (k.running !== 0 || k.waiters.length !== 0 || this.keys.get(k.name) !== k) return;
    this.keys.delete(k.name);
    if (--k.group.keys === 0) this.groups.delete(k.group.name);
  }
}

const IDLE_TICKET: Ticket = { cancel() {} };

/** The group with fewer grants in progress first (among equals, served longest ago), then its keys likewise. */
function before(a: Key, b: Key): boolean {
  const p = a.group;
  const q = b.group;
  if (p !== q) return p.running !== q.running ? p.running < q.running : p.served < q.served;
  return a.running !== b.running ? a.running < b.running : a.served < b.served;
}
