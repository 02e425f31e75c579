import { describe, expect, it } from 'vitest';
import { EffectError } from '../src/index.js';
import { isRetryableError, parseRetryAfter, RETRYABLE_STATUSES, retryDelayMs } from '../src/retry.js';

describe('retry policy', () => {
  it('retries only network errors and timeouts, and 429, 502, 503, 504', () => {
    expect((['refused', 'timeout', 'network', 'too_large', 'invalid', 'http_status'] as const).filter((k) => isRetryableError(new EffectError(k, k)))).toEqual([
      'timeout',
      'network',
    ]);
    expect([...RETRYABLE_STATUSES].sort()).toEqual([429, 502, 503, 504]);
  });

  it('backs off exponentially with at most 20% jitter', () => {
    for (const [retry, base] of [
      [0, 200],
      [1, 200],
      [3, 100],
    ] as const) {
      const delay = retryDelayMs(retry, base);
      expect(delay).toBeGreaterThanOrEqual(base * 2 ** retry);
      expect(delay).toBeLessThanOrEqual(base * 2 ** retry * 1.2 + 1);
    }
  });

  it('honours Retry-After in seconds or as a date, up to 10 s', () => {
    expect(retryDelayMs(4, 200, '2')).toBe(2000);
    expect(retryDelayMs(0, 200, '3600')).toBe(10_000);
    expect(parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 5)).toUTCString(), Date.UTC(2030, 0, 1))).toBe(5000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});
