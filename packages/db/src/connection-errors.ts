/**
 * True when an error says the database connection (or the server) went away or could not be opened — the server
 * restarting or shutting down, pg_terminate_backend, a reset socket — rather than that a statement was wrong. Such
 * a request may simply be tried again: the pools open new connections once the server is back.
 */
export function isConnectionLost(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  // Not the `cause` chain: a failed fetch (an effect, a provider) carries ECONNREFUSED there, and is no database's.
  const { code, message } = err as { code?: unknown; message?: unknown };
  // SQLSTATE class 08 (connection exception), 57P01..57P03 (admin/crash shutdown, cannot connect now), 53300 (too
  // many connections), and the socket's own errors (an AggregateError when several addresses were tried).
  // 08P01 (protocol violation) is deterministic, e.g. too many bind parameters: not a reason to try again.
  if (typeof code === 'string' && ((code.startsWith('08') && code !== '08P01') || LOST_CODES.has(code))) return true;
  if (typeof message === 'string' && LOST_MESSAGES.test(message)) return true;
  return err instanceof AggregateError && err.errors.some(isConnectionLost);
}

const LOST_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

// node-postgres and pg-pool say so in words only.
const LOST_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect|Cannot use a pool after calling end)/;
