import { ServiceError } from '@wds/errors';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_DERIVED_SQL_BYTES, MAX_SQL_BYTES, loadParser, parseOne, parseSqlTree, parserStatus } from '../src/parse.js';

beforeAll(loadParser);

/** Runs `fn`, which must throw a ServiceError, and returns it. */
function serviceError(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    return err as ServiceError;
  }
  throw new Error('expected a ServiceError, nothing was thrown');
}

/** `SELECT '<filler>'` of exactly `bytes` UTF-8 bytes, filler made of `char` (1-4 bytes) plus ASCII padding. */
function selectOfBytes(bytes: number, char = 'x'): string {
  const head = "SELECT '";
  const tail = "'";
  const room = bytes - head.length - tail.length;
  const charBytes = Buffer.byteLength(char);
  const n = Math.floor(room / charBytes);
  const sql = head + char.repeat(n) + 'x'.repeat(room - n * charBytes) + tail;
  expect(Buffer.byteLength(sql)).toBe(bytes);
  return sql;
}

/** A statement that would parse fine if the parser ever saw it: the refusal is the limit, not a syntax error. */
const wideSelect = (bytes: number) => selectOfBytes(bytes);

describe('SQL text length limit (checked in parseOne, before parsing)', () => {
  it('is 1 MiB of UTF-8', () => {
    expect(MAX_SQL_BYTES).toBe(1024 * 1024);
  });

  it('parses a statement of exactly MAX_SQL_BYTES bytes', () => {
    const parsed = parseOne(wideSelect(MAX_SQL_BYTES));
    expect(parsed.tag).toBe('SelectStmt');
    expect(parsed.stmt.SelectStmt.targetList[0].ResTarget.val.A_Const.sval.sval).toHaveLength(MAX_SQL_BYTES - 9);
  });

  it('parses a multi-byte statement of exactly MAX_SQL_BYTES bytes', () => {
    const sql = selectOfBytes(MAX_SQL_BYTES, '€');
    expect(sql.length).toBeLessThan(MAX_SQL_BYTES / 2);
    expect(parseOne(sql).tag).toBe('SelectStmt');
  });

  it('refuses one byte more, before parsing', () => {
    const before = parserStatus();
    const err = serviceError(() => parseOne(wideSelect(MAX_SQL_BYTES + 1)));
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/longer than 1 MiB/);
    // As many UTF-16 units as the limit has bytes: refused without counting bytes.
    expect(err.details).toBe(`got at least ${MAX_SQL_BYTES + 1} bytes`);
    expect(parserStatus()).toEqual(before);
  });

  it.each([
    ['é (2 bytes)', 'é'],
    ['€ (3 bytes)', '€'],
    ['😀 (4 bytes, two UTF-16 units)', '😀'],
  ])('counts UTF-8 bytes, not characters: %s', (_name, char) => {
    const sql = selectOfBytes(MAX_SQL_BYTES + 1, char);
    expect(sql.length).toBeLessThan(MAX_SQL_BYTES);
    const err = serviceError(() => parseOne(sql));
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.message).toMatch(/longer than 1 MiB/);
    expect(err.details).toBe(`got ${MAX_SQL_BYTES + 1} bytes`);
  });

  it('refuses multi-megabyte text without counting it', () => {
    const sql = `SELECT ${'1,'.repeat(10 * MAX_SQL_BYTES)}1`;
    const err = serviceError(() => parseOne(sql));
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.details).toBe(`got at least ${sql.length} bytes`);
    expect(parserStatus().ready).toBe(true);
  });

  it('parseSqlTree (for derived text) takes a larger limit but never above MAX_DERIVED_SQL_BYTES', () => {
    const sql = wideSelect(2 * MAX_SQL_BYTES);
    expect(() => parseSqlTree(sql)).toThrow(/longer than 1 MiB/);
    expect(parseSqlTree(sql, { maxBytes: 2 * MAX_SQL_BYTES }).stmts).toHaveLength(1);
    const err = serviceError(() => parseSqlTree(wideSelect(MAX_DERIVED_SQL_BYTES + 1), { maxBytes: 100 * MAX_SQL_BYTES }));
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.message).toContain(`${MAX_DERIVED_SQL_BYTES} bytes`);
  });
});

describe('other text the parser must not see', () => {
  it('refuses NUL bytes (the parser would stop reading at them)', () => {
    const err = serviceError(() => parseOne('SELECT 1\u0000; DROP TABLE x'));
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.message).toMatch(/NUL/);
  });

  it('refuses text that is not valid Unicode (a lone surrogate, e.g. from a JSON "\\ud800" escape)', () => {
    for (const sql of ["SELECT '\uD800'", "SELECT 'a\uDC00b'", 'SELECT 1 -- \uD83D']) {
      const err = serviceError(() => parseOne(sql));
      expect(err.code).toBe('PARSE_ERROR');
      expect(err.message).toMatch(/not valid Unicode/);
    }
    expect(parseOne("SELECT '😀'").stmt.SelectStmt.targetList[0].ResTarget.val.A_Const.sval.sval).toBe('😀');
  });

  it('answers empty text as empty SQL', () => {
    for (const sql of ['', '   ', ';', '-- nothing']) {
      const err = serviceError(() => parseOne(sql));
      expect(err.code).toBe('PARSE_ERROR');
      expect(err.message).toMatch(/Empty SQL/);
    }
  });

  it('keeps syntax errors as they were', () => {
    const err = serviceError(() => parseOne('SELECT FROM WHERE'));
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.message).toBe('SQL syntax error: syntax error at or near "WHERE"');
    expect(err.details).toBe('at character 13');
  });

  it('keeps refusing several statements', () => {
    expect(serviceError(() => parseOne('SELECT 1; SELECT 2')).code).toBe('MULTIPLE_STATEMENTS');
  });
});

/**
 * Nesting under the byte limit. PostgreSQL's grammar (bison) stops at about 10 000 stack entries with a clean
 * "memory exhausted" syntax error. But trees that bison builds without deep stack (left-associative chains such as
 * `1+1+1…`, `a::int::int…`, `a->'k'->'k'…`, joins, unions), and moderately nested subqueries, are deep enough that
 * libpg_query's recursive walk over the tree overflows the JS/WebAssembly native stack: `RangeError: Maximum call
 * stack size exceeded` thrown through the WebAssembly frames, which leaves that instance corrupted (see
 * parser-recovery.test.ts). Both must end as a ServiceError, and the parser must work afterwards.
 */
describe('deep nesting below the byte limit', () => {
  const n = 100_000;
  it.each([
    ['parentheses', `SELECT ${'('.repeat(n)}1${')'.repeat(n)}`],
    ['scalar subqueries', `SELECT ${'(SELECT '.repeat(n)}1${')'.repeat(n)}`],
    ['NOT NOT NOT …', `SELECT ${'NOT '.repeat(n)}true`],
    ['ARRAY[ARRAY[…]]', `SELECT ${'ARRAY['.repeat(n)}1${']'.repeat(n)}`],
    ['function calls', `SELECT ${'f('.repeat(n)}1${')'.repeat(n)}`],
    ['CASE in CASE', `SELECT ${'CASE WHEN true THEN '.repeat(n / 10)}1${' END'.repeat(n / 10)}`],
    ['parenthesised joins', `SELECT 1 FROM ${'('.repeat(n / 10)}a${' JOIN a ON true)'.repeat(n / 10)}`],
    ['1+1+1… (left-associative)', `SELECT 1${'+1'.repeat(n)}`],
    ['casts a::int::int…', `SELECT 1${'::int'.repeat(n)}`],
    ['JSON a->k->k…', `SELECT a${"->'k'".repeat(n)}`],
    ['string concatenation', `SELECT 'a'${"||'a'".repeat(n)}`],
    ['chained joins', `SELECT 1 FROM a${' JOIN a ON true'.repeat(n / 2)}`],
    ['UNION chains', Array(n / 2).fill('SELECT 1').join(' UNION ')],
  ])('%s: a ServiceError, and the parser works afterwards', async (_name, sql) => {
    expect(Buffer.byteLength(sql)).toBeLessThanOrEqual(MAX_SQL_BYTES);
    const err = serviceError(() => parseOne(sql));
    expect(err.code).toBe('PARSE_ERROR');
    expect(err.status).toBe(400);
    await loadParser();
    for (let i = 0; i < 3; i++) expect(parseOne(`SELECT a, b FROM t${i} WHERE c = ${i}`).tag).toBe('SelectStmt');
  });

  it('still parses ordinary nesting', () => {
    expect(parseOne(`SELECT ${'('.repeat(500)}1${')'.repeat(500)}`).tag).toBe('SelectStmt');
    expect(parseOne(`SELECT ${'(SELECT '.repeat(100)}1${')'.repeat(100)}`).tag).toBe('SelectStmt');
    expect(parseOne(`SELECT 1${'+1'.repeat(200)}`).tag).toBe('SelectStmt');
    expect(parseOne(`SELECT 1 WHERE ${Array(10_000).fill('a = 1').join(' AND ')}`).tag).toBe('SelectStmt');
  });
});
