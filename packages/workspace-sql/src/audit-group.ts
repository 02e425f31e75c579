import type pg from 'pg';

interface Waiting {
  /** A VALUES row of the group's INSERT. */
  row: string;
  done: (err?: unknown) => void;
}

/**
 * Group commit for the audit entries of reads. An entry is written at once when nothing is being written; entries
 * that arrive while a write is under way go together in the next one, in one transaction and one round trip. So
 * under load many reads share a commit, and alone a read waits one round trip, as before. Every caller waits for
 * its own entry, so an entry is listed once its request has answered. The commit does not wait for its WAL flush
 * (`synchronous_commit = off`): a crash may lose the read entries of its last moment, never a write's entry.
 * The entries of a commit are the rows of one INSERT, so the server parses and plans one statement per commit.
 */
export class AuditGroup {
  private queue: Waiting[] = [];
  private writing: Promise<void> | undefined;

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
      if (!this.writing) this.writing = this.drain();
    });
  }

  /** Resolves once every entry handed in so far is written (or has failed): before the pool is ended. */
  async close(): Promise<void> {
    await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          await this.commit(batch.map((w) => w.row));
          for (const w of batch) w.done();
        } catch (err) {
          // A value one entry carries (SQLSTATE class 22, 23) must not cost the others theirs: each is tried alone.
          // Anything else (the connection, the server) would fail them all again: they fail together, at once.
          const code = (err as { code?: unknown } | null)?.code;
          const oneEntry = typeof code === 'string' && /^2[23]/.test(code);
          if (batch.length === 1 || !oneEntry) for (const w of batch) w.done(err);
          else for (const w of batch) await this.commit([w.row]).then(() => w.done(), (e: unknown) => w.done(e ?? new Error('audit write failed')));
        }
      }
    } finally {
      this.writing = undefined;
    }
  }

  private async commit(rows: string[]): Promise<void> {
    await this.pool.query(`BEGIN; SET LOCAL synchronous_commit = off; ${this.insert} ${rows.join(', ')}; COMMIT`);
  }
}
