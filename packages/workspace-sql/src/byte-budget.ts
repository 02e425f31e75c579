/**
 * A byte budget for what PostgreSQL sends back, enforced on the socket before node-postgres buffers and decodes it.
 *
 * PostgreSQL has no limit on the size of a row it returns, and node-postgres buffers every backend message whole
 * and then turns its values into strings: one 600 MB value makes V8 throw `ERR_STRING_TOO_LONG` inside a socket
 * handler, which ends the process (every tenant). The guard installed here reads only the 5-byte header of each
 * backend message (type byte + big-endian int32 length, the length counting itself) as the bytes arrive, tracking
 * message boundaries across chunk splits, and destroys the connection as soon as a header announces too much:
 * the body of a refused message is never buffered.
 *
 * Usage: pass `stream: budgetedStream(budget)` in a `pg.Client` or `pg.Pool` config. A refusal destroys the socket
 * with a {@link ByteBudgetError}; node-postgres rejects the pending `client.query()` with that error object and then
 * emits it as `'error'` on the client. The client is dead: discard it (`poolClient.release(err)`), never reuse it.
 */
import type { EventEmitter } from 'node:events';
import net from 'node:net';

export interface ByteBudget {
  /** Largest `DataRow` (or `CopyData`) message, header included: every value of one row together. */
  maxRowBytes: number;
  /** Largest response: the bytes of every backend message since the last `ReadyForQuery` (one query round trip). */
  maxResponseBytes: number;
  /**
   * Largest single message of any other type (an `ErrorResponse` or `NoticeResponse` may quote a whole value,
   * e.g. `invalid input syntax for type integer: "…"`). Default: the larger of `maxRowBytes` and 1 MiB, so that a
   * small row budget does not refuse the `RowDescription` of a wide table.
   */
  maxMessageBytes?: number;
}

/** `row`: one row too large; `response`: the whole result too large; `message`: another backend message too large. */
export type ByteBudgetKind = 'row' | 'response' | 'message';

export interface ByteBudgetRefusal {
  kind: ByteBudgetKind;
  /** The limit that was exceeded, in bytes. */
  limit: number;
  /** Bytes announced at the moment of refusal: the message's size (`row`, `message`) or the response total so far. */
  size: number;
}

export const BYTE_BUDGET_CODE = 'WDS_BYTE_BUDGET';

const MESSAGES: Record<ByteBudgetKind, string> = {
  row: 'a row of the result is larger than',
  response: 'the result is larger than',
  message: 'a message from the database is larger than',
};

/** The error a guarded connection is destroyed with; the pending `client.query()` rejects with this very object. */
export class ByteBudgetError extends Error implements ByteBudgetRefusal {
  readonly code = BYTE_BUDGET_CODE;

  constructor(
    readonly kind: ByteBudgetKind,
    readonly limit: number,
    readonly size: number,
  ) {
    super(`${MESSAGES[kind]} ${limit} bytes`);
    this.name = 'ByteBudgetError';
  }
}

const MiB = 1024 * 1024;
const DATA_ROW = 0x44; // 'D'
const COPY_DATA = 0x64; // 'd'
const READY_FOR_QUERY = 0x5a; // 'Z'
const refusalKey = Symbol.for('wds.byteBudget.refusal');

/** Follows backend message boundaries through the chunks of one connection, reading only headers. */
class Meter {
  private readonly maxRow: number;
  private readonly maxResponse: number;
  private readonly maxMessage: number;
  /** Body bytes of the current message not seen yet. */
  private skip = 0;
  /** Header bytes collected so far (1..4) when a header is split across chunks; 0 at a boundary. */
  private head = 0;
  private type = 0;
  private len = 0;
  /** Bytes of the messages since the last ReadyForQuery. */
  private response = 0;
  /** The startup exchange (authentication, parameter statuses) ends at the first ReadyForQuery and is not counted. */
  private started = false;

  constructor(budget: ByteBudget) {
    this.maxRow = budget.maxRowBytes;
    this.maxResponse = budget.maxResponseBytes;
    this.maxMessage = budget.maxMessageBytes ?? Math.max(budget.maxRowBytes, MiB);
  }

  /** Reads the headers that start in `chunk`; returns the refusal if one of them asks for too much. */
  scan(chunk: Uint8Array): ByteBudgetError | undefined {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      if (this.skip > 0) {
        const rest = n - i;
        if (rest <= this.skip) {
          this.skip -= rest;
          return undefined;
        }
        i += this.skip;
        this.skip = 0;
        continue;
      }
      if (this.head === 0 && n - i >= 5) {
        const len = chunk[i + 1]! * 0x1000000 + ((chunk[i + 2]! << 16) | (chunk[i + 3]! << 8) | chunk[i + 4]!);
        const err = this.header(chunk[i]!, len);
        if (err) return err;
        i += 5;
        continue;
      }
      // A header split across chunks: one byte at a time.
      const b = chunk[i++]!;
      if (this.head === 0) {
        this.type = b;
        this.len = 0;
      } else {
        this.len = this.len * 256 + b;
      }
      if (++this.head === 5) {
        this.head = 0;
        const err = this.header(this.type, this.len);
        if (err) return err;
      }
    }
    return undefined;
  }

  /** `len` counts itself (4 bytes) and the body, not the type byte. */
  private header(type: number, len: number): ByteBudgetError | undefined {
    this.skip = len > 4 ? len - 4 : 0;
    const size = len + 1;
    if (type === READY_FOR_QUERY) {
      this.response = 0;
      this.started = true;
      return undefined;
    }
    if (this.started) this.response += size;
    if (type === DATA_ROW || type === COPY_DATA) {
      if (size > this.maxRow) return new ByteBudgetError('row', this.maxRow, size);
    } else if (size > this.maxMessage) {
      return new ByteBudgetError('message', this.maxMessage, size);
    }
    if (this.response > this.maxResponse) return new ByteBudgetError('response', this.maxResponse, this.response);
    return undefined;
  }
}

/**
 * Node's stream_base (`onStreamRead`) hands every chunk read from a TCP or TLS handle to `socket.push(buf)`; the
 * guard sits in front of it on this one socket. A refused chunk is dropped, not pushed: node-postgres never sees it.
 */
function guard(socket: net.Socket, budget: ByteBudget, record: (err: ByteBudgetError) => void): void {
  const meter = new Meter(budget);
  const push = socket.push;
  let refused = false;
  socket.push = function guardedPush(this: net.Socket, chunk: unknown, encoding?: BufferEncoding): boolean {
    if (refused) return false;
    // Sockets push Buffers; a string (not produced by a socket read) is measured all the same.
    const bytes = chunk instanceof Uint8Array ? chunk : typeof chunk === 'string' ? Buffer.from(chunk, encoding) : undefined;
    const err = bytes && meter.scan(bytes);
    if (err) {
      refused = true;
      record(err);
      this.destroy(err);
      return false;
    }
    return push.call(this, chunk, encoding);
  };
}

type PgConnection = EventEmitter & { stream?: unknown };

function isEmitter(x: unknown): x is PgConnection {
  return typeof x === 'object' && x !== null && typeof (x as EventEmitter).once === 'function';
}

function checkBudget(budget: ByteBudget): void {
  const ok = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 1;
  if (!ok(budget.maxRowBytes) || !ok(budget.maxResponseBytes) || (budget.maxMessageBytes !== undefined && !ok(budget.maxMessageBytes))) {
    throw new TypeError('A byte budget needs positive, finite byte counts');
  }
}

/**
 * A socket factory for the `stream` option of `pg.Client` / `pg.Pool`: every connection gets its own guarded socket.
 *
 * Plain TCP and Unix sockets are guarded directly. With `ssl`, node-postgres replaces the socket by a `TLSSocket`
 * (`tls.connect({ socket })` takes over the TCP handle, so the plain socket sees no more data); node-postgres calls
 * this factory as a method of its `Connection`, and the guard moves onto the TLS socket at the connection's
 * `'sslconnect'` event, before any decrypted byte arrives. Should that hook be unavailable, a TLS connection fails
 * rather than run unguarded.
 */
export function budgetedStream(budget: ByteBudget): (this: unknown, config?: { ssl?: unknown }) => net.Socket {
  checkBudget(budget);
  const limits: ByteBudget = { ...budget };
  return function budgetedSocket(this: unknown, config?: { ssl?: unknown }): net.Socket {
    const socket = new net.Socket();
    const connection = isEmitter(this) ? this : undefined;
    const record = (err: ByteBudgetError) => {
      if (connection) (connection as unknown as Record<symbol, unknown>)[refusalKey] = err;
    };
    if (!config?.ssl) {
      guard(socket, limits, record);
      return socket;
    }
    if (!connection) {
      // Fail closed: without the connection there is no way to follow the socket through the TLS upgrade.
      socket.connect = function refuse(this: net.Socket): net.Socket {
        process.nextTick(() => this.destroy(new Error('The byte budget cannot guard this TLS connection')));
        return this;
      } as net.Socket['connect'];
      return socket;
    }
    connection.once('sslconnect', () => {
      const secure = connection.stream;
      if (secure instanceof net.Socket && secure !== socket) {
        guard(secure, limits, record);
      } else if (secure instanceof net.Socket) {
        secure.destroy(new Error('The byte budget cannot guard this TLS connection'));
      }
    });
    return socket;
  };
}

/**
 * The refusal carried by `err` (the rejection of `client.query()`, the client's `'error'` event, or an error that
 * wraps one of those in `cause`), or by a client (`pg.Client` / `pg.PoolClient`) whose connection the guard ended.
 */
export function isByteBudgetError(err: unknown): ByteBudgetRefusal | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    const o = e as { code?: unknown; kind?: unknown; limit?: unknown; size?: unknown; cause?: unknown; connection?: unknown };
    if (o.code === BYTE_BUDGET_CODE && (o.kind === 'row' || o.kind === 'response' || o.kind === 'message') && typeof o.limit === 'number') {
      return { kind: o.kind, limit: o.limit, size: typeof o.size === 'number' ? o.size : 0 };
    }
    const recorded = typeof o.connection === 'object' && o.connection !== null ? (o.connection as Record<symbol, unknown>)[refusalKey] : undefined;
    e = recorded ?? o.cause;
  }
  return undefined;
}
