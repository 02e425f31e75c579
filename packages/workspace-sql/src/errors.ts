import { ServiceError } from '@wds/errors';
import { toLogicalText } from '@wds/sql-rewriter';
import { isByteBudgetError } from './byte-budget.js';

export interface ErrorLimits {
  statementTimeoutMs: number;
  maxRows: number;
}

export const rowCapError = (limits: ErrorLimits) =>
  new ServiceError(
    'EXECUTION_ERROR',
    `The result has more than ${limits.maxRows} rows (row cap)`,
    'add a LIMIT or a narrower WHERE; the cap is SQL_MAX_ROWS',
  );

/** True when the error says the connection itself is gone (not a statement error): the client must be discarded. */
export const isConnectionError = (err: unknown): boolean => {
  // Our own refusals (the row cap) leave a healthy connection.
  if (err instanceof ServiceError) return false;
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    // SQLSTATE class 08 (connection exception), 57P01..57P03 (the server ended the session), socket errors.
    return code.startsWith('08') || /^57P0[1-3]$/.test(code) || code.startsWith('E') || code === 'WDS_BYTE_BUDGET';
  }
  return typeof message === 'string' && /connection|terminated|not queryable|socket/i.test(message);
};

/**
 * True when the error came from the service's own audit call in the statement's transaction (`user_data.wds_audit`,
 * migrations 0022 and 0023): a refusal (SQLSTATE WDS03) or its insert failing. Never the user's doing — user SQL
 * cannot name the function, and the call runs after the user's statement — so it is no EXECUTION_ERROR of theirs.
 */
export const isAuditFailure = (err: unknown): boolean => {
  const { code, where } = (err ?? {}) as { code?: unknown; where?: unknown };
  return code === 'WDS03' || (typeof where === 'string' && /\bwds_audit\(/.test(where));
};

/** What a statement whose audit entry could not be written answers: it was rolled back with it. */
export const auditFailedError = () =>
  new ServiceError('SERVICE_UNAVAILABLE', 'The statement was rolled back: its audit entry could not be written', 'nothing was changed; try again', {
    retryAfterSeconds: 1,
  });

/**
 * Database errors become EXECUTION_ERROR with physical names turned back into logical ones. The server's DETAIL
 * is never passed on: it can carry row data ("Failing row contains (…)", "Key (…)=(…) conflicts with existing key").
 */
export function mapDatabaseError(err: unknown, limits: ErrorLimits): unknown {
  if (err instanceof ServiceError) return err;
  const budget = isByteBudgetError(err);
  if (budget) {
    switch (budget.kind) {
      case 'row':
        return new ServiceError(
          'EXECUTION_ERROR',
          `A row of the result is larger than ${budget.limit} bytes`,
          'select fewer or shorter values (substr, left); the limit is SQL_MAX_ROW_BYTES',
        );
      case 'response':
        return new ServiceError(
          'EXECUTION_ERROR',
          `The result is larger than ${budget.limit} bytes`,
          'add a LIMIT, select fewer columns or page through the rows; the limit is SQL_MAX_RESPONSE_BYTES',
        );
      default:
        // Say an error message that quotes a huge value: the message itself is the problem, not the result.
        return new ServiceError('EXECUTION_ERROR', `The database answered with a message larger than ${budget.limit} bytes`, 'SQL_MAX_ROW_BYTES');
    }
  }
  const e = err as { code?: string; message?: string; hint?: string; constraint?: string };
  if (isConnectionError(err)) {
    return new ServiceError('SERVICE_UNAVAILABLE', 'The database connection was lost while the statement ran', 'try again');
  }
  if (typeof e?.code !== 'string' || typeof e.message !== 'string') return err;
  if (isAuditFailure(err)) return auditFailedError();
  if (e.code === 'WDS01') {
    const what = e.message.replace(/^row check failed: /, '');
    const [table, operation] = what.split(':');
    return new ServiceError(
      'POLICY_DENIED',
      'Denied by policy',
      `a row of table "${table}" would be outside your ${operation} policy; nothing was changed`,
    );
  }
  // Memory bounds (migration 0020, roles.ts): the message says what was too large; no row data is in it.
  if (e.code === 'WDS02') return new ServiceError('EXECUTION_ERROR', e.message, e.hint ?? 'the limits are in docs/sql-and-policies.md');
  if (e.code === '53200' || e.code === '53400') {
    return new ServiceError(
      'EXECUTION_ERROR',
      e.code === '53200' ? 'The statement needed more memory than one statement may use' : 'The statement needed more temporary disk space than one statement may use',
      `SQLSTATE ${e.code}; aggregate or sort fewer rows, or page through them`,
    );
  }
  if (e.code === '57014') {
    return new ServiceError(
      'EXECUTION_ERROR',
      `The statement ran longer than ${limits.statementTimeoutMs} ms (statement timeout)`,
      'the limit is SQL_STATEMENT_TIMEOUT_MS',
    );
  }
  const details = [
    `SQLSTATE ${e.code}`,
    e.constraint ? `constraint ${toLogicalText(e.constraint)}` : undefined,
    e.hint ? toLogicalText(e.hint) : undefined,
  ];
  return new ServiceError('EXECUTION_ERROR', toLogicalText(e.message), details.filter(Boolean).join('; '));
}
