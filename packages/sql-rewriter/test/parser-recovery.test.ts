import { ServiceError } from '@wds/errors';
import { loadModule, parseSync } from 'libpg-query';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SQL_BYTES, loadParser, parseOne, parseSqlTree, parserStatus } from '../src/parse.js';
import { ParserFailure, PgParseError, createParserInstance } from '../src/parser-module.js';

/**
 * How libpg-query 18.1.5 (WebAssembly) fails, and that this package survives it. All real parsers, no mocks.
 *
 * - `SELECT a,a,a,…` of 10 MiB needs more than the instance's 1 GiB: PostgreSQL raises FATAL, which calls
 *   `proc_exit(1)`; the Emscripten glue sets `process.exitCode = 1` (the host would later exit with status 1) and
 *   throws `ExitStatus` out of the middle of the parse. Nothing is unwound: ~900 MB stay allocated, and later
 *   statements (even under 1 MiB) fail with `ExitStatus` again or `RuntimeError: memory access out of bounds`.
 * - Under 1 MiB, a deep left-associative tree (`SELECT 1+1+1…`) makes libpg_query's recursive tree walk overflow
 *   the native stack: `RangeError: Maximum call stack size exceeded` thrown through the WebAssembly frames. The
 *   next statements still parse, but the instance leaks memory and its stack pointer; after about 25 such
 *   statements a parse never returns (an endless loop inside the instance blocks the event loop) - not shown here
 *   on libpg-query's own instance, because the test would hang.
 */

const MiB = 1024 * 1024;
/** `SELECT a,a,…,a` of about `bytes` bytes: ~120 MB of parser memory per MiB of text. */
const columnList = (bytes: number) => `SELECT ${'a,'.repeat(Math.floor(bytes / 2))}a`;
/** Makes the parser run out of its 1 GiB and exit. */
const EXITING = columnList(10 * MiB);
/** Under the limit, but overflows the native stack in libpg_query's tree walk. */
const DEEP = `SELECT 1${'+1'.repeat(200_000)}`;
const ORDINARY = [
  'SELECT 1',
  'SELECT a, b FROM t WHERE c = $1 ORDER BY a LIMIT 10',
  "INSERT INTO t (a, b) VALUES (1, 'x') RETURNING a",
  'UPDATE t SET a = a + 1 WHERE b IS NOT NULL',
  'WITH x AS (SELECT 1 AS a) SELECT a FROM x JOIN t USING (a)',
];

/** What a fresh, never-failed instance answers, to compare against after recoveries. */
let expected: unknown[];
const exitCodeBefore = process.exitCode;

beforeAll(async () => {
  await loadParser();
  const fresh = await createParserInstance();
  expected = ORDINARY.map((sql) => fresh.parse(sql));
});

afterEach(() => {
  // Whatever a test did, the host's exit status must be untouched (the glue's `quit_` sets it).
  expect(process.exitCode).toBe(exitCodeBefore);
});

const catchError = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error, nothing was thrown');
};

function expectOrdinaryStatementsParse(): void {
  ORDINARY.forEach((sql, i) => {
    const parsed = parseOne(sql);
    expect(parsed.tree).toEqual(expected[i]);
  });
}

describe("libpg-query's own shared instance (the finding, reproduced)", () => {
  it('exits on a 10 MiB statement, sets process.exitCode, and fails later statements under 1 MiB', async () => {
    await loadModule();
    const probe = columnList(MAX_SQL_BYTES - 16);
    expect(parseSync('SELECT 1')).toBeTruthy();
    try {
      const err = catchError(() => parseSync(EXITING)) as Error & { sqlDetails?: unknown; status?: number };
      expect(err.name).toBe('ExitStatus');
      expect(err.message).toBe('Program terminated with exit(1)');
      expect(err.sqlDetails).toBeUndefined();
      expect(process.exitCode).toBe(1);
      process.exitCode = exitCodeBefore;

      // A statement within the limit that a fresh instance parses (next test) now fails: the instance is corrupt.
      const later = catchError(() => parseSync(probe)) as Error & { sqlDetails?: unknown };
      expect(later.sqlDetails).toBeUndefined();
      expect(['ExitStatus', 'RuntimeError']).toContain(later.name);
    } finally {
      process.exitCode = exitCodeBefore;
    }

    // This package's parser has its own instance and is unaffected.
    expect(parseOne(probe).tag).toBe('SelectStmt');
    expectOrdinaryStatementsParse();
  }, 120_000);
});

describe('a parser instance (parser-module.ts)', () => {
  it('turns an exit into ParserFailure, keeps process.exitCode, and refuses further calls', async () => {
    const instance = await createParserInstance();
    const failure = catchError(() => instance.parse(EXITING));
    expect(failure).toBeInstanceOf(ParserFailure);
    expect((failure as ParserFailure).cause).toMatchObject({ name: 'ExitStatus', status: 1 });
    // PostgreSQL's last words went to the instance's stderr buffer, not to the host's stderr.
    expect((failure as ParserFailure).stderr.join('\n')).toMatch(/FATAL/);
    expect(process.exitCode).toBe(exitCodeBefore);
    expect(instance.broken).toBe(failure);
    // A broken instance is never entered again (that is what could hang the event loop).
    expect(catchError(() => instance.parse('SELECT 1'))).toBe(failure);
  }, 120_000);

  it('turns a native stack overflow into ParserFailure', async () => {
    const instance = await createParserInstance();
    const failure = catchError(() => instance.parse(DEEP)) as ParserFailure;
    expect(failure).toBeInstanceOf(ParserFailure);
    expect(failure.cause).toBeInstanceOf(RangeError);
    expect(instance.broken).toBe(failure);
  });

  it('keeps ordinary syntax errors as PgParseError without breaking the instance', async () => {
    const instance = await createParserInstance();
    const err = catchError(() => instance.parse('SELECT * FORM t')) as PgParseError;
    expect(err).toBeInstanceOf(PgParseError);
    expect(err.sqlDetails).toMatchObject({ message: 'syntax error at or near "FORM"', cursorPosition: 9 });
    expect(instance.broken).toBeUndefined();
    expect(instance.parse('SELECT 1').stmts).toHaveLength(1);
  });

  it('gives every instance its own memory', async () => {
    const a = await createParserInstance();
    const b = await createParserInstance();
    catchError(() => a.parse(DEEP));
    expect(a.broken).toBeInstanceOf(ParserFailure);
    expect(b.broken).toBeUndefined();
    expect(b.parse(ORDINARY[1] as string)).toEqual(expected[1]);
  });
});

describe('parseOne recovers', () => {
  it('answers the failing statement with PARSE_ERROR; the next statement parses at once, on the spare', async () => {
    await loadParser();
    const before = parserStatus();
    expect(before).toMatchObject({ ready: true, spare: true });

    const err = catchError(() => parseOne(DEEP)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.status).toBe(400);
    expect(err.message).toBe('The statement could not be parsed: it is too large or too deeply nested');

    const after = parserStatus();
    expect(after).toMatchObject({ ready: true, spare: false, failures: before.failures + 1 });
    expect(after.lastFailure).toMatch(/Maximum call stack size exceeded/);
    // No await in between: the spare took over synchronously.
    expectOrdinaryStatementsParse();

    await loadParser();
    expect(parserStatus()).toMatchObject({ ready: true, spare: true, instances: before.instances + 1 });
    for (let round = 0; round < 3; round++) expectOrdinaryStatementsParse();
  });

  it('answers SERVICE_UNAVAILABLE (never a plain Error) while no instance is healthy, until loadParser()', async () => {
    await loadParser();
    const before = parserStatus();
    expect((catchError(() => parseOne(DEEP)) as ServiceError).code).toBe('PARSE_ERROR');
    expect((catchError(() => parseOne(DEEP)) as ServiceError).code).toBe('PARSE_ERROR');
    expect(parserStatus()).toMatchObject({ ready: false, spare: false, failures: before.failures + 2 });

    const waiting = catchError(() => parseOne('SELECT 1')) as ServiceError;
    expect(waiting).toBeInstanceOf(ServiceError);
    expect(waiting.code).toBe('SERVICE_UNAVAILABLE');
    expect(waiting.status).toBe(503);

    await loadParser();
    expect(parserStatus()).toMatchObject({ ready: true, spare: true, instances: before.instances + 2 });
    for (let round = 0; round < 3; round++) expectOrdinaryStatementsParse();
  });

  it('reloads once however many callers wait', async () => {
    await loadParser();
    const before = parserStatus().instances;
    catchError(() => parseOne(DEEP));
    catchError(() => parseOne(DEEP));
    await Promise.all([loadParser(), loadParser(), loadParser()]);
    expect(parserStatus().instances).toBe(before + 2);
    expectOrdinaryStatementsParse();
  });

  it('refills without being asked (the reload starts at the failure)', async () => {
    await loadParser();
    catchError(() => parseOne(DEEP));
    catchError(() => parseOne(DEEP));
    // No loadParser() here: wait for the refill that the failures started, by turning the event loop.
    while (!parserStatus().spare) await new Promise((resolve) => setImmediate(resolve));
    expectOrdinaryStatementsParse();
  });

  it('is not wedged by many failures in a row (libpg-query alone hangs after about 25)', async () => {
    await loadParser();
    const before = parserStatus();
    for (let i = 0; i < 40; i++) {
      expect((catchError(() => parseOne(DEEP)) as ServiceError).code).toBe('PARSE_ERROR');
      await loadParser();
      expect(parseOne(`SELECT a FROM t${i}`).tag).toBe('SelectStmt');
    }
    expect(parserStatus().failures).toBe(before.failures + 40);
    expectOrdinaryStatementsParse();
  }, 120_000);

  it('recovers through parseSqlTree (derived text) as well', async () => {
    await loadParser();
    const err = catchError(() => parseSqlTree(`${DEEP}; SELECT 2`, { maxBytes: 2 * MAX_SQL_BYTES })) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.code).toBe('PARSE_ERROR');
    await loadParser();
    expect(parseSqlTree('SELECT 1; SELECT 2').stmts).toHaveLength(2);
  });

  it('replaces an instance whose memory grew past the recycle size', async () => {
    await loadParser();
    const before = parserStatus();
    const big = columnList(MAX_SQL_BYTES - 16);
    // The largest kind of statement under the limit grows an instance from 128 MiB to about 250 MiB ...
    const probe = await createParserInstance();
    const fresh = probe.heapBytes;
    probe.parse(big);
    expect(probe.heapBytes).toBeGreaterThan(fresh + 64 * MiB);
    // ... so through parseOne the spare takes over right after such a statement, and the grown one is dropped.
    expect(parseOne(big).tag).toBe('SelectStmt');
    expect(parserStatus()).toMatchObject({ ready: true, spare: false, failures: before.failures, heapBytes: fresh });
    await loadParser();
    expect(parserStatus()).toMatchObject({ ready: true, spare: true, instances: before.instances + 1 });
    expectOrdinaryStatementsParse();
  }, 120_000);
});
