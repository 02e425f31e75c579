/**
 * The one error type of the effect runner. `kind` says what went wrong so the workflow engine can report it
 * without parsing messages; `details` carries the technical part (error codes, refused addresses) for logs.
 */

/**
 * - `refused`: the outbound guard would not let the call reach its target (private address, bad scheme).
 * - `timeout`: no complete answer within the time limit (or the caller's signal fired with a TimeoutError).
 * - `network`: DNS failure, connection refused or reset, cancelled by the caller's signal.
 * - `too_large`: the response body went over the size cap.
 * - `invalid`: the effect or fetch definition (or a value mapped into a header) cannot be sent.
 * - `http_status`: a Fetch input source answered with a non-2xx status (`status` says which).
 */
export type EffectErrorKind = 'refused' | 'timeout' | 'network' | 'too_large' | 'invalid' | 'http_status';

export class EffectError extends Error {
  /** The HTTP status, for `http_status`. */
  status?: number;
  /** How many attempts were made before giving up (set by runEffect; 0 when the spec was invalid). */
  attempts?: number;

  constructor(
    readonly kind: EffectErrorKind,
    message: string,
    readonly details?: string,
  ) {
    super(message);
    this.name = 'EffectError';
  }
}

/** The error for a call stopped by the caller's AbortSignal: its reason when that is an EffectError. */
export function cancelledError(signal: AbortSignal): EffectError {
  const reason: unknown = signal.reason;
  if (reason instanceof EffectError) return reason;
  const name = reason instanceof Error ? reason.name : '';
  const details = reason instanceof Error ? reason.message : reason === undefined ? undefined : String(reason);
  if (name === 'TimeoutError') return new EffectError('timeout', 'the call ran past the caller\'s deadline', details);
  return new EffectError('network', 'the call was cancelled', details);
}
