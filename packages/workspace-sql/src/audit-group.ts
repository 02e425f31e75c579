import type pg from 'pg';

interface Waiting {
  sql: string;
  done: (err?: unknown) => void;
}

/**
 * Group commit for the audit entries of reads. An entry is written at once when nothing is being written; entries
 * that arrive while a write is under way go together in the next one, in one transaction and one round trip. So
 * under load many reads share a commit, and alone a read waits one round trip, as before. Every caller waits for
 * its own entry, so an entry is listed once its request has answered. The commit does not wait for its WAL flush
 * (`synchronous_commit = off`): a crash may lose the read entries of its last moment, never a write's entry.
 */
export class AuditGroup {
  private queue: Waiting[] = [];
  private writing = false;

  constructor(
    private readonly pool: pg.Pool,
    /** Entries in one transaction at most. */
    private readonly maxBatch = 200,
  ) {}

  write(sql: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ sql, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          await this.commit(batch.map((w) => w.sql));
          for (const w of batch) w.done();
        } catch (err) {
          // One entry must not cost the others theirs: after a failed batch each is tried alone.
          if (batch.length === 1) (batch[0] as Waiting).done(err);
          else for (const w of batch) await this.commit([w.sql]).then(() => w.done(), (e: unknown) => w.done(e ?? new Error('audit write failed')));
        }
      }
    } finally {
      this.writing = false;
    }
  }

  private async commit(statements: string[]): Promise<void> {
    await this.pool.query(['BEGIN', 'SET LOCAL synchronous_commit = off', ...statements, 'COMMIT'].join('; '));
  }
}
