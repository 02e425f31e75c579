import pg from 'pg';

export interface ChannelListenerOptions {
  /** Each notification's payload. */
  onMessage(payload: string): void;
  /** The connection is listening: at start (`again` false) and after every reconnect. */
  onUp?(again: boolean): void;
  /** The connection was lost: notifications sent until `onUp` are missed. */
  onDown?(err: unknown): void;
  /** The connection's application_name (pg_stat_activity). */
  name: string;
}

/**
 * One dedicated connection LISTENing on one channel, reconnecting for as long as it takes (a database restart, a
 * network outage). NOTIFY is delivered at the sender's commit and never for a rollback; while the connection is down
 * notifications are lost, which `onDown`/`onUp` tell.
 */
export class ChannelListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private connected = false;
  private started = false;

  constructor(
    private readonly connectionString: string | undefined,
    private readonly channel: string,
    private readonly opts: ChannelListenerOptions,
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
  }

  get healthy(): boolean {
    return this.connected && !this.stopped;
  }

  async start(): Promise<void> {
    if (!this.connectionString || this.stopped) return;
    // TCP keep-alive: a half-open connection (a peer that vanished without a FIN) errors out instead of looking healthy.
    const client = new pg.Client({ connectionString: this.connectionString, application_name: this.opts.name, keepAlive: true });
    client.on('notification', (m) => m.channel === this.channel && m.payload && this.opts.onMessage(m.payload));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
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
    this.opts.onUp?.(this.started);
    this.started = true;
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.connected = false;
    client.end().catch(() => {});
    this.opts.onDown?.(err);
    if (!this.stopped) this.reconnect(200);
  }

  /** Tries again every second until it succeeds or the listener is stopped. */
  private reconnect(delayMs: number): void {
    setTimeout(() => {
      if (this.stopped) return;
      this.start().catch(() => this.reconnect(1000));
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
