/**
 * The retry policy of effects: which outcomes are worth another attempt and how long to wait before it.
 */
import { cancelledError, type EffectError } from './errors.js';

/** Statuses that say "try again later". */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** Longest wait a Retry-After header can ask for. */
export const MAX_RETRY_AFTER_MS = 10_000;

/** Transport failures worth another attempt; a refusal, an invalid call or an oversized answer never is. */
export function isRetryableError(err: EffectError): boolean {
  return err.kind === 'network' || err.kind === 'timeout';
}

/** Retry-After as milliseconds (seconds or an HTTP date), capped at 10 s; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) {
    ms = Number(text) * 1000;
  } else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - now);
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

/** The wait before retry number `retry` (0-based): Retry-After when given, else baseMs * 2^retry plus up to 20% jitter. */
export function retryDelayMs(retry: number, baseMs: number, retryAfter?: string): number {
  const asked = parseRetryAfter(retryAfter);
  if (asked !== undefined) return asked;
  const delay = baseMs * 2 ** retry;
  return Math.round(delay + Math.random() * delay * 0.2);
}

/** Waits, unless the signal fires first (then rejects with the cancellation error). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelledError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelledError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
