import { ServiceError } from '@wds/errors';
import { ParserFailure, type ParserInstance, PgParseError, createParserInstance } from './parser-module.js';

/**
 * Longest statement text any entry point may hand to the parser, in UTF-8 bytes (what the parser sees).
 * Checked by `parseOne`, which every entry point (HTTP `/sql`, STF `sql()`, MCP) goes through.
 */
export const MAX_SQL_BYTES = 1024 * 1024;

/**
 * Ceiling for `parseSqlTree`'s `maxBytes`, for text the service derives from a statement (rewritten SQL). The parse
 * result's JSON is up to ~45 times the text (a 1 MiB `SELECT 1,1,…` gives 47 MB, then a JS object graph several
 * times that), and around 10-20 MB of text the parser runs out of its 1 GiB and exits.
 */
export const MAX_DERIVED_SQL_BYTES = 4 * MAX_SQL_BYTES;

/**
 * WebAssembly memory never shrinks. When a parse leaves an instance's memory above this, the spare replaces it. An
 * instance starts at 128 MiB (about 5 MB of it resident); the largest statements under MAX_SQL_BYTES grow it to
 * about 250 MiB.
 */
const RECYCLE_HEAP_BYTES = 192 * 1024 * 1024;

/*
 * Two instances: `current` parses; `spare` is loaded and unused. When `current` breaks (or grows too large) the spare
 * takes over synchronously, so the next statement parses at once even if its caller did not await `loadParser()`,
 * and a new spare is loaded in the background. Only when instances break faster than spares load (two failures
 * without a turn of the event loop between them) is there no healthy instance; `parseOne` then answers
 * SERVICE_UNAVAILABLE until `loadParser()` has refilled.
 */
let current: ParserInstance | undefined;
let spare: ParserInstance | undefined;
/** `current` is healthy but grew past RECYCLE_HEAP_BYTES, and there was no spare to replace it yet. */
let retire = false;
let filling: Promise<void> | undefined;
let instances = 0;
let failures = 0;
let lastFailure: string | undefined;

const ignore = () => {};
const healthy = (): boolean => current !== undefined && !current.broken;
const complete = (): boolean => healthy() && !retire && spare !== undefined;

/** Creates instances until there is a healthy, not oversized `current` and a `spare`. */
function refill(): Promise<void> {
  filling ??= (async () => {
    try {
      while (!complete()) {
        const instance = await createParserInstance();
        instances++;
        if (!healthy() || retire) {
          current = instance;
          retire = false;
        } else {
          spare = instance;
        }
      }
    } finally {
      filling = undefined;
    }
  })();
  return filling;
}

/** `current` broke or grew too large: the spare takes over now, and a new spare (or current) is loaded. */
function replaceCurrent(): void {
  if (spare) {
    current = spare;
    spare = undefined;
    retire = false;
  } else if (healthy()) {
    retire = true;
  }
  refill().catch(ignore);
}

/**
 * Makes the parser ready; afterwards `parseOne` is synchronous. The first call loads the WebAssembly (tens of ms);
 * later calls return at once unless an instance broke or was recycled, in which case they wait for the
 * replacement (a few ms: the binary is compiled once per process). Call it before parsing; callers that serve
 * requests, before every statement (cheap). Rejects only if no instance can be created.
 */
export function loadParser(): Promise<void> {
  if (complete()) return Promise.resolve();
  return refill();
}

export interface ParserStatus {
  /** A healthy instance is loaded, so `parseOne` will not answer SERVICE_UNAVAILABLE. */
  ready: boolean;
  /** A spare instance is loaded, so the next failure is recovered from synchronously. */
  spare: boolean;
  /** Instances created so far (the first load creates two; each recovery or recycle adds one). */
  instances: number;
  /** Parses that broke an instance (not counting ordinary syntax errors). */
  failures: number;
  /** Internal description of the last such failure, for logs (never sent to clients). */
  lastFailure: string | undefined;
  /** Linear memory of the current instance. */
  heapBytes: number | undefined;
}

/** The parser's health, for logs, health checks and tests. */
export function parserStatus(): ParserStatus {
  return {
    ready: healthy(),
    spare: spare !== undefined,
    instances,
    failures,
    lastFailure,
    heapBytes: current?.heapBytes,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the libpg-query AST is JSON whose shape depends on the node tag
export type AnyNode = any;

export interface ParsedStatement {
  /** `{ version, stmts: [one RawStmt] }`, the shape the deparser takes. */
  tree: AnyNode;
  /** The statement node itself, e.g. `{ SelectStmt: {...} }`. */
  stmt: AnyNode;
  tag: string;
}

/**
 * Refuses text the parser must not see: longer than `maxBytes` of UTF-8, containing NUL (the parser reads a C
 * string, so it would stop at the NUL and see less than was sent), or not valid Unicode. Cheap: linear scans in
 * native code.
 */
export function checkSqlText(sql: string, maxBytes: number = MAX_SQL_BYTES): void {
  if (typeof sql !== 'string') throw new ServiceError('PARSE_ERROR', 'SQL text must be a string');
  // UTF-8 needs at least one byte per UTF-16 code unit and at most three, so only some lengths need counting.
  if (sql.length > maxBytes / 3) {
    const bytes = sql.length > maxBytes ? undefined : Buffer.byteLength(sql, 'utf8');
    if (bytes === undefined || bytes > maxBytes) {
      const limit = maxBytes === MAX_SQL_BYTES ? '1 MiB' : `${maxBytes} bytes`;
      throw new ServiceError(
        'PARSE_ERROR',
        `SQL text is longer than ${limit} (${maxBytes} bytes of UTF-8)`,
        bytes === undefined ? `got at least ${sql.length} bytes` : `got ${bytes} bytes`,
      );
    }
  }
  if (sql.includes('\u0000')) throw new ServiceError('PARSE_ERROR', 'SQL must not contain NUL bytes');
  // A lone UTF-16 surrogate has no UTF-8 form: Emscripten's encoder writes it as an invalid byte sequence that the
  // raw parser takes unchecked (the tree then holds U+FFFD), Node's encoder replaces it. Neither is what was sent.
  if (!isWellFormed(sql)) throw new ServiceError('PARSE_ERROR', 'SQL text is not valid Unicode (it contains a lone surrogate)');
}

const LONE_SURROGATE = /\p{Surrogate}/u;
/** `String.prototype.isWellFormed` (Node 20+; not in this package's ES2023 lib typings), else the same by regex. */
const isWellFormed = (s: string): boolean => {
  const native = (s as unknown as { isWellFormed?: () => boolean }).isWellFormed;
  return native ? native.call(s) : !LONE_SURROGATE.test(s);
};

/**
 * Parses SQL text into libpg-query's parse result (`{ version, stmts? }`, any number of statements), with the
 * same checks and recovery as `parseOne`. For text the service produced itself (the round-trip check of
 * rewritten SQL), pass a larger `maxBytes` (at most MAX_DERIVED_SQL_BYTES is used). Throws only ServiceError.
 */
export function parseSqlTree(sql: string, options: { maxBytes?: number } = {}): AnyNode {
  checkSqlText(sql, Math.min(options.maxBytes ?? MAX_SQL_BYTES, MAX_DERIVED_SQL_BYTES));
  return parseTree(sql);
}

export function parseOne(sql: string): ParsedStatement {
  const tree: AnyNode = parseSqlTree(sql);
  const stmts = tree.stmts ?? [];
  if (stmts.length === 0) throw new ServiceError('PARSE_ERROR', 'Empty SQL: send exactly one statement');
  if (stmts.length > 1) {
    throw new ServiceError('MULTIPLE_STATEMENTS', `Send exactly one statement per request (got ${stmts.length})`);
  }
  const stmt = stmts[0].stmt;
  return { tree, stmt, tag: Object.keys(stmt)[0] as string };
}

function parseTree(sql: string): AnyNode {
  const instance = current;
  if (!instance || instance.broken) {
    refill().catch(ignore);
    throw new ServiceError(
      'SERVICE_UNAVAILABLE',
      instance ? 'The SQL parser is restarting; retry the request' : 'The SQL parser is not loaded yet; retry the request',
    );
  }
  try {
    return instance.parse(sql);
  } catch (err) {
    if (err instanceof PgParseError) {
      throw new ServiceError('PARSE_ERROR', `SQL syntax error: ${err.message}`, `at character ${err.sqlDetails.cursorPosition + 1}`);
    }
    // Not an ordinary syntax error (a native stack overflow on deeply nested expressions, an exit when out of
    // memory, ...): the instance is broken (`parse` marked it so) and is never called again; the spare takes over.
    // The statement itself is answered as a client error.
    failures++;
    lastFailure = err instanceof ParserFailure ? [err.message, ...err.stderr.slice(-2)].join(' | ') : String(err);
    if (!(err instanceof ParserFailure)) instance.markBroken(new ParserFailure('unexpected error from the parser', err, []));
    throw new ServiceError(
      'PARSE_ERROR',
      'The statement could not be parsed: it is too large or too deeply nested',
      'simplify the statement, for example fewer chained operators or nesting levels',
    );
  } finally {
    if (instance === current && (instance.broken || instance.heapBytes > RECYCLE_HEAP_BYTES)) replaceCurrent();
  }
}
