import type pg from 'pg';

interface Waiting {
  /** A VALUES row of the group's INSERT; none for a `flush` marker (done when everything before it is). */
  row: string | undefined;
  done: (err?: unknown) => void;
}

/**
 * Group commit for the audit entries of reads. An entry is written at once when nothing is being written; entries
 * that arrive while a write is under way go together in the next one, in one transaction and one round trip. So
 * under load many reads share a commit. `write` resolves once the entry is committed; callers may answer before
 * that (see `pending`), and `flush` waits for every entry handed in so far. The commit does not wait for its WAL flush
 * (`synchronous_commit = off`): a crash may lose the read entries of its last moment, never a write's entry.
 * The entries of a commit are the rows of one INSERT, so the server parses and plans one statement per commit.
 */
export class AuditGroup {
  private queue: Waiting[] = [];
  private writing: Promise<void> | undefined;
  private inFlight = 0;
  private queuedRows = 0;

  constructor(
    private readonly pool: pg.Pool,
    /** `INSERT INTO table (columns) VALUES`: what each entry is a row of. */
    private readonly insert: string,
    /** Entries in one transaction at most. */
    private readonly maxBatch = 200,
  ) {}

  /** Writes one entry, a VALUES row such as `(1, 'a')` of the group's INSERT. */
  write(row: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, done: (err) => (err === undefined ? resolve() : reject(err)) });
      this.queuedRows++;
      if (!this.writing) this.writing = this.drain();
    });
  }

  /** Entries handed in and not yet committed (or failed). */
  get pending(): number {
    return this.queuedRows + this.inFlight;
  }

  /** Resolves once every entry handed in so far is written (or has failed); later ones are not waited for. */
  flush(): Promise<void> {
    if (!this.writing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      // Batches are written in order: the marker is done once every entry queued before it is.
      this.queue.push({ row: undefined, done: () => resolve() });
      if (!this.writing) this.writing = this.drain();
    });
  }

  /** `flush`, before the pool is ended. */
  close(): Promise<void> {
    return this.flush();
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const waiting = this.queue.splice(0, this.maxBatch);
        const batch = waiting.filter((w): w is Waiting & { row: string } => w.row !== undefined);
        this.inFlight = batch.length;
        this.queuedRows -= batch.length;
        try {
          if (batch.length > 0) await this.commit(batch.map((w) => w.row));
          for (const w of waiting) w.done();
        } catch (err) {
          // A value one entry carries (SQLSTATE class 22, 23) must not cost the others theirs: each is tried alone.
          // Anything else (the connection, the server) would fail them all again: they fail together, at once.
          const code = (err as { code?: unknown } | null)?.code;
          const oneEntry = typeof code === 'string' && /^2[23]/.test(code);
          if (batch.length === 1 || !oneEntry) for (const w of batch) w.done(err);
          else for (const w of batch) await this.commit([w.row]).then(() => w.done(), (e: unknown) => w.done(e ?? new Error('audit write failed')));
          for (const w of waiting) if (w.row === undefined) w.done();
        }
      }
    } finally {
      this.inFlight = 0;
      this.writing = undefined;
    }
  }

  private async commit(rows: string[]): Promise<void> {
    await this.pool.query(`BEGIN; SET LOCAL synchronous_commit = off; ${this.insert} ${rows.join(', ')}; COMMIT`);
  }
}
