import pg from 'pg';

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
  private client: pg.Client | undefined;
  private stopped = false;
  private connected = false;
  /** Bumped on every invalidation: a value read before an invalidation must not be cached after it. */
  generation = 0;

  constructor(
    private readonly connectionString: string | undefined,
    private readonly log: (msg: string, err?: unknown) => void = () => {},
  ) {}

  get healthy(): boolean {
    return this.connected && !this.stopped;
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

  async start(): Promise<void> {
    if (!this.connectionString || this.stopped) return;
    // TCP keep-alive: a half-open connection (a peer that vanished without a FIN) errors out instead of looking healthy.
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'wds-cache-bus', keepAlive: true });
    client.on('notification', (m) => m.channel === CHANNEL && m.payload && this.invalidate(m.payload));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.connected = true;
    // A value read while nobody listened may predate a change whose message went out then: not to be cached.
    this.invalidate('*');
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.connected = false;
    client.end().catch(() => {});
    // Whatever happened while nobody listened is unknown: forget everything.
    this.invalidate('*');
    if (this.stopped) return;
    this.log('cache invalidation listener lost; caches are bypassed until it reconnects', err);
    this.reconnect(200);
  }

  /** Tries again every second for as long as it takes (a database restart, a network outage). */
  private reconnect(delayMs: number): void {
    setTimeout(() => {
      if (this.stopped) return;
      this.start().then(
        () => this.connected && this.log('cache invalidation listener reconnected'),
        () => this.reconnect(1000),
      );
    }, delayMs).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    await client?.end().catch(() => {});
  }
}
