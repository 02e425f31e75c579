/**
 * runEffect: performs an effect for one input, with a per-attempt timeout, a response size cap and bounded
 * retries (network errors, timeouts, 429, 502, 503, 504) that all carry the same Idempotency-Key.
 */
import { randomUUID } from 'node:crypto';
import { type EffectSpec, prepareEffectRequest, validateEffectSpec } from './effect-spec.js';
import { EffectError } from './errors.js';
import type { OutboundGuard } from './guard.js';
import { type HttpResponse, sendRequest } from './http.js';
import { isRetryableError, RETRYABLE_STATUSES, retryDelayMs, sleep } from './retry.js';

export interface EffectCallOptions {
  guard: OutboundGuard;
  /** Per-attempt timeout when the spec has no timeout_secs. Default 30 s. */
  defaultTimeoutMs?: number;
  /** Response body cap. Default 10 MiB. */
  maxResponseBytes?: number;
  /** Base of the exponential backoff between attempts. Default 200 ms. */
  backoffMs?: number;
  /** Sent as Idempotency-Key on every attempt. Default: a random UUID per runEffect call. */
  idempotencyKey?: string;
  /** Cancels the call (and any wait between attempts). */
  signal?: AbortSignal;
}

export interface EffectResult {
  status: number;
  /** 2xx. */
  ok: boolean;
  headers: Record<string, string>;
  body: unknown;
  attempts: number;
  duration_ms: number;
  idempotency_key: string;
}

export const DEFAULT_EFFECT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_BACKOFF_MS = 200;

/**
 * Performs the effect: headers/query from evaluateMappings, JSON body from buildObject (no body for GET/HEAD).
 * Any HTTP status is returned (4xx/5xx after retries); redirects are returned, never followed. Transport
 * failures throw EffectError with `attempts` set; an invalid spec or a refusal is never retried.
 */
export async function runEffect(spec: EffectSpec, input: unknown, opts: EffectCallOptions): Promise<EffectResult> {
  const started = performance.now();
  const idempotencyKey = opts.idempotencyKey ?? randomUUID();
  let attempts = 0;
  try {
    const problems = validateEffectSpec(spec);
    if (problems.length > 0) throw new EffectError('invalid', `the effect definition is invalid: ${problems[0]}`, problems.join('\n'));
    if (/[^\x21-\x7e]/.test(idempotencyKey)) throw new EffectError('invalid', 'the idempotency key must be printable ASCII without spaces');
    const prepared = prepareEffectRequest(spec, input);
    prepared.headers['idempotency-key'] = idempotencyKey;
    const retries = spec.retries ?? 0;
    const timeoutMs = spec.timeout_secs ? spec.timeout_secs * 1000 : (opts.defaultTimeoutMs ?? DEFAULT_EFFECT_TIMEOUT_MS);
    const backoffMs = opts.backoffMs ?? DEFAULT_BACKOFF_MS;

    for (;;) {
      attempts++;
      let response: HttpResponse;
      try {
        response = await sendRequest({
          ...prepared,
          timeoutMs,
          maxBytes: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
          guard: opts.guard,
          signal: opts.signal,
        });
      } catch (err) {
        if (!(err instanceof EffectError) || !isRetryableError(err) || attempts > retries || opts.signal?.aborted) throw err;
        await sleep(retryDelayMs(attempts - 1, backoffMs), opts.signal);
        continue;
      }
      if (RETRYABLE_STATUSES.has(response.status) && attempts <= retries) {
        await sleep(retryDelayMs(attempts - 1, backoffMs, response.headers['retry-after']), opts.signal);
        continue;
      }
      return {
        status: response.status,
        ok: response.status >= 200 && response.status < 300,
        headers: response.headers,
        body: response.body,
        attempts,
        duration_ms: Math.round(performance.now() - started),
        idempotency_key: idempotencyKey,
      };
    }
  } catch (err) {
    const error = err instanceof EffectError ? err : new EffectError('network', `the effect failed: ${(err as Error).message}`);
    error.attempts = attempts;
    throw error;
  }
}
