import { ServiceError } from '@wds/errors';

/**
 * The safety net under input validation: a PostgreSQL error that a request's values caused (a data exception,
 * a value past a limit, a constraint) is the client's 4xx, not a 500. Validation before the query is the rule;
 * reaching this is logged so the missing check gets written. The database's message is never shown (it names
 * internal tables); the SQLSTATE is.
 */
const SQLSTATE = /^[0-9A-Z]{5}$/;

const MEANING: Record<string, string> = {
  '22001': 'a value is too long',
  '22003': 'a number is out of range',
  '22007': 'a date or time is malformed',
  '22008': 'a date or time is out of range',
  '22021': 'a text value has a character the database cannot store',
  '22P02': 'a value has the wrong format',
  '22P05': 'a text value has a character the database cannot store',
  '54000': 'a value exceeds a database limit',
  '54001': 'the input is too complex (nested too deeply)',
  '23502': 'a required value is missing',
  '23514': 'a value is not allowed',
};

/** The 4xx for a database error caused by input, or undefined for any other error. */
export function inputErrorOf(err: unknown): ServiceError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  const fromDb = typeof code === 'string' && SQLSTATE.test(code) && typeof (err as { severity?: unknown }).severity === 'string';
  if (!fromDb) return undefined;
  const details = `${MEANING[code] ?? 'the database refused a value'} (SQLSTATE ${code})`;
  if (code === '23505') return new ServiceError('CONFLICT', 'Already exists', details);
  if (code === '23503') return new ServiceError('CONFLICT', 'Conflicts with related data', details);
  // Class 22 (data exception), 54 (program limit) and the remaining integrity checks.
  if (code.startsWith('22') || code.startsWith('54') || code === '23502' || code === '23514') {
    return new ServiceError('VALIDATION_ERROR', 'Invalid request', details);
  }
  return undefined;
}
