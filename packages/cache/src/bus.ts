import { ChannelListener } from './listener.js';

export const CHANNEL = 'wds_invalidate';

type Listener = (topic: string) => void;

/**
 * Cache invalidation across processes: a change publishes a topic (`ws:<id>`, `user:<id>`) with NOTIFY inside
 * its own transaction, so the message goes out exactly when the change commits; every process LISTENs on one
 * dedicated connection and drops what it cached under that topic. The process that made the change also drops
 * it locally right after commit, so its own next request never sees the old state.
 *
 * While the listening connection is down nothing may be served from a cache (`healthy` is false): a missed
 * message would otherwise keep a revoked credential alive.
 */
export class InvalidationBus {
  private readonly listeners = new Set<Listener>();
  private readonly listener: ChannelListener;
  /** Bumped on every invalidation: a value read before an invalidation must not be cached after it. */
  generation = 0;

  constructor(connectionString: string | undefined, log: (msg: string, err?: unknown) => void = () => {}) {
    this.listener = new ChannelListener(connectionString, CHANNEL, {
      name: 'wds-cache-bus',
      onMessage: (topic) => this.invalidate(topic),
      // A value read while nobody listened may predate a change whose message went out then: not to be cached.
      onUp: (again) => {
        this.invalidate('*');
        if (again) log('cache invalidation listener reconnected');
      },
      // Whatever happens while nobody listens is unknown: forget everything.
      onDown: (err) => {
        this.invalidate('*');
        log('cache invalidation listener lost; caches are bypassed until it reconnects', err);
      },
    });
  }

  get healthy(): boolean {
    return this.listener.healthy;
  }

  /** SQL that publishes a topic from inside a transaction (delivered on commit). */
  static notifySql(topic: string, literal: (s: string) => string): string {
    return `SELECT pg_notify('${CHANNEL}', ${literal(topic)})`;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Drops a topic in this process; `*` drops everything. */
  invalidate(topic: string): void {
    this.generation++;
    for (const l of this.listeners) l(topic);
  }

  start(): Promise<void> {
    return this.listener.start();
  }

  stop(): Promise<void> {
    return this.listener.stop();
  }
}
