// The output pg-boss stores on a failed job, turned into the one line `onFailed` receives.

/** What pg-boss writes when maintenance finds a job still active after its deadline (its worker died or hung). */
const PG_BOSS_TIMEOUT = 'job failed by timeout in active state';
/** The same output, written by `enqueue` when it expires a dead job that holds a singleton key. */
export const PG_BOSS_TIMEOUT_OUTPUT = { value: { message: PG_BOSS_TIMEOUT } };

export const deadlineMessage = (seconds: number): string => `deadline exceeded: not finished within ${seconds} s`;
export const INTERRUPTED_MESSAGE = 'interrupted: the job queue stopped before the job finished';
export const SUPERSEDED_MESSAGE = 'superseded: the job was expired while this attempt ran (its heartbeat was late), and retried';
export const EXPIRED_MESSAGE =
  'deadline exceeded: still active after its deadline or without a heartbeat, so its worker crashed or lost the database';

/** The message of a handler's rejection: the Error's message (or name), or the thrown value as text. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === 'string' ? err : JSON.stringify(err) ?? String(err);
}

/** Reads `{ message }` (ours) or `{ value: { message } }` / `{ value }` (pg-boss's own). */
export function failureMessage(output: unknown): string {
  const message = messageOf(output) ?? messageOf(field(output, 'value'));
  if (message === PG_BOSS_TIMEOUT) return EXPIRED_MESSAGE;
  if (message) return message;
  const value = field(output, 'value');
  return typeof value === 'string' && value ? value : 'failed (no reason recorded)';
}

function messageOf(value: unknown): string | undefined {
  const message = field(value, 'message');
  return typeof message === 'string' && message ? message : undefined;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
