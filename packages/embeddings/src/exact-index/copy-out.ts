/**
 * `COPY (…) TO STDOUT (FORMAT binary)` read through node-postgres, tuple by tuple. Vectors arrive as PostgreSQL's
 * binary array format (4-byte big-endian floats) instead of text, which would cost a float parse per value in
 * JavaScript and a float print per value in the server (about 6 times slower at 100k × 384 values). node-postgres's
 * own `binary` result mode decodes every value as UTF-8 text, so it cannot be used for raw bytes; its Query hands
 * COPY data to `handleCopyData`, which this subclass overrides.
 */
import pg from 'pg';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** A tuple's fields: field f is buf[starts[f], starts[f] + lengths[f]), length -1 for NULL. Valid during the call. */
export type TupleHandler = (buf: Buffer, starts: Int32Array, lengths: Int32Array) => void;

/** Splits the binary COPY stream into tuples of `fields` fields, whatever the boundaries of the messages. */
export class BinaryCopyParser {
  private carry: Buffer | null = null;
  private headerRead = false;
  private readonly starts: Int32Array;
  private readonly lengths: Int32Array;
  done = false;

  constructor(
    private readonly fields: number,
    private readonly onTuple: TupleHandler,
  ) {
    this.starts = new Int32Array(fields);
    this.lengths = new Int32Array(fields);
  }

  push(chunk: Buffer): void {
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    let p = 0;
    if (!this.headerRead) {
      if (buf.length < 19 || buf.length < 19 + buf.readInt32BE(15)) {
        this.carry = Buffer.from(buf);
        return;
      }
      if (!buf.subarray(0, 11).equals(SIGNATURE)) throw new Error('not a binary COPY stream');
      p = 19 + buf.readInt32BE(15);
      this.headerRead = true;
    }
    while (!this.done && p + 2 <= buf.length) {
      const count = buf.readInt16BE(p);
      if (count === -1) {
        this.done = true;
        p += 2;
        break;
      }
      if (count !== this.fields) throw new Error(`binary COPY tuple of ${count} fields, expected ${this.fields}`);
      let q = p + 2;
      let complete = true;
      for (let f = 0; f < count; f++) {
        if (q + 4 > buf.length) {
          complete = false;
          break;
        }
        const length = buf.readInt32BE(q);
        q += 4;
        this.starts[f] = q;
        this.lengths[f] = length;
        if (length > 0) q += length;
        if (q > buf.length) {
          complete = false;
          break;
        }
      }
      if (!complete) break;
      this.onTuple(buf, this.starts, this.lengths);
      p = q;
    }
    // The message's buffer belongs to node-postgres: keep a copy of an incomplete tuple.
    this.carry = p < buf.length ? Buffer.from(buf.subarray(p)) : null;
  }

  /** Throws unless the stream ended with its trailer. */
  finish(): void {
    if (!this.done || this.carry) throw new Error('binary COPY stream ended early');
  }
}

class CopyOutQuery extends pg.Query {
  /** The parser's first error: the rest of the stream is ignored, and the query fails with it once it ends. */
  failure: Error | undefined;

  constructor(
    text: string,
    private readonly parser: BinaryCopyParser,
    done: (err: Error | undefined) => void,
  ) {
    const settled = { once: false };
    super({ text }, (err) => {
      if (settled.once) return;
      settled.once = true;
      done(err ?? undefined);
    });
  }

  // Called by the client for each CopyData message of the active query.
  handleCopyData(msg: { chunk: Buffer }): void {
    if (this.failure) return;
    try {
      this.parser.push(msg.chunk);
    } catch (err) {
      this.failure = err instanceof Error ? err : new Error(String(err));
    }
  }
}

/** Runs `COPY (<select>) TO STDOUT (FORMAT binary)` on `client`, each tuple of `fields` fields to `onTuple`. */
export function copyOutBinary(client: pg.ClientBase, select: string, fields: number, onTuple: TupleHandler): Promise<void> {
  const parser = new BinaryCopyParser(fields, onTuple);
  return new Promise<void>((resolve, reject) => {
    const query: CopyOutQuery = new CopyOutQuery(`COPY (${select}) TO STDOUT (FORMAT binary)`, parser, (err) => {
      if (err) return reject(err);
      if (query.failure) return reject(query.failure);
      try {
        parser.finish();
        resolve();
      } catch (e) {
        reject(e);
      }
    });
    client.query(query);
  });
}
