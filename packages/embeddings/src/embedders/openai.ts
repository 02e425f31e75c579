import { ServiceError } from '@wds/errors';
import { l2Normalise } from '../vector.js';
import { batches } from '../batches.js';
import { type Embedder, embedNonBlank } from './embedder.js';

export interface OpenAiEmbedderConfig {
  /** Including the version path: `https://api.openai.com/v1`; the embedder posts to `${baseUrl}/embeddings`. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  dimensions: number;
  /** Per request; default 30 s. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** Inputs per request; OpenAI accepts 2048, compatible servers often fewer. */
const BATCH = 128;
/** How much of an upstream error body is kept in the error details. */
const DETAIL_CHARS = 300;

/** Any OpenAI-compatible `/embeddings` endpoint. Every failure is EMBEDDING_API_ERROR, without the key in it. */
export function createOpenAiEmbedder(config: OpenAiEmbedderConfig): Embedder {
  const { model, dimensions, apiKey } = config;
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let url: URL;
  try {
    url = new URL(`${config.baseUrl.replace(/\/+$/, '')}/embeddings`);
  } catch {
    throw new ServiceError('EMBEDDING_NOT_CONFIGURED', 'The embedding API base URL is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ServiceError('EMBEDDING_NOT_CONFIGURED', 'The embedding API base URL must be http or https');
  }
  if (!model) throw new ServiceError('EMBEDDING_NOT_CONFIGURED', 'The embedding API model is not set');
  if (!Number.isInteger(dimensions) || dimensions < 1) {
    throw new ServiceError('EMBEDDING_NOT_CONFIGURED', 'The embedding API dimensions must be a positive integer');
  }
  // Errors name the endpoint without user info or query, either of which may hold a credential.
  const endpoint = `${url.protocol}//${url.host}${url.pathname}`;
  const redact = (text: string) => (apiKey ? text.split(apiKey).join('[redacted]') : text);
  const fail = (message: string, details?: string): never => {
    throw new ServiceError('EMBEDDING_API_ERROR', redact(message), details === undefined ? undefined : redact(details));
  };

  async function request(input: string[]): Promise<number[][]> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    let status: number;
    let text: string;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ input, model, dimensions }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      const name = (err as { name?: unknown } | null)?.name;
      const timedOut = name === 'TimeoutError' || name === 'AbortError';
      return fail(
        timedOut ? `Embedding API did not answer within ${timeoutMs} ms` : 'Embedding API request failed',
        `POST ${endpoint}: ${describe(err)}`,
      );
    }
    if (status < 200 || status > 299) {
      return fail(`Embedding API answered ${status}`, `POST ${endpoint}: ${text.slice(0, DETAIL_CHARS)}`);
    }
    return parseResponse(text, input.length);
  }

  function parseResponse(text: string, expected: number): number[][] {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return fail('Embedding API returned a malformed response', 'the body is not JSON');
    }
    const data = (body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) return fail('Embedding API returned a malformed response', 'no data array');
    if (data.length !== expected) {
      return fail(`Embedding API returned ${data.length} embeddings for ${expected} inputs`);
    }
    const out = new Array<number[] | undefined>(expected);
    for (const [position, entry] of data.entries()) {
      const { embedding, index } = (entry ?? {}) as { embedding?: unknown; index?: unknown };
      const at = index === undefined ? position : index;
      if (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at >= expected || out[at]) {
        return fail('Embedding API returned a malformed response', `bad or repeated index at data[${position}]`);
      }
      if (!Array.isArray(embedding) || !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        return fail('Embedding API returned a malformed response', `data[${position}].embedding is not an array of numbers`);
      }
      if (embedding.length !== dimensions) {
        return fail(`Embedding API returned vectors of ${embedding.length} dimensions, expected ${dimensions}`);
      }
      out[at] = l2Normalise(embedding as number[]);
    }
    return out as number[][];
  }

  return {
    kind: 'openai',
    model,
    dimensions,
    multimodal: false,
    embed: (texts) =>
      embedNonBlank(texts, dimensions, async (nonBlank) => {
        const out: number[][] = [];
        for (const batch of batches(nonBlank, BATCH)) out.push(...(await request(batch)));
        return out;
      }),
  };
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // fetch reports "fetch failed" and keeps the reason (ECONNREFUSED, a TLS error) in its cause.
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}
