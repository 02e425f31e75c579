import { ServiceError } from '@wds/errors';

/**
 * Turns texts into vectors. Every vector has `dimensions` entries and unit length (L2-normalised), so the cosine
 * similarity of two vectors is their dot product. An empty or whitespace-only text gives the zero vector: it has no
 * meaning to embed, and it is never sent to a model or an API.
 */
export interface Embedder {
  readonly kind: 'local' | 'openai' | 'hashing';
  /** Stored with every embedding; vectors of different models are not comparable. */
  readonly model: string;
  readonly dimensions: number;
  /** Whether images can be embedded; none of the current embedders can. */
  readonly multimodal: boolean;
  /** One vector per text, in order. */
  embed(texts: string[]): Promise<number[][]>;
}

export type EmbedderConfig =
  /** Universal Sentence Encoder lite, shipped inside npm; offline, 512 dimensions. */
  | { kind: 'local' }
  /**
   * An OpenAI-compatible API. `baseUrl` includes the version path, e.g. `https://api.openai.com/v1`;
   * requests go to `${baseUrl}/embeddings`.
   */
  | { kind: 'openai'; baseUrl: string; apiKey?: string; model: string; dimensions: number; timeoutMs?: number }
  /** Feature hashing: lexical overlap only; for tests and as a last resort. 384 dimensions by default. */
  | { kind: 'hashing'; dimensions?: number }
  /** Embeddings switched off. */
  | { kind: 'none' };

/** The embedder, or null when embeddings are switched off (`kind: 'none'`). */
export function requireEmbedder(embedder: Embedder | null): Embedder {
  if (!embedder) {
    throw new ServiceError('EMBEDDING_NOT_CONFIGURED', 'No embedding model is configured on this instance', 'the operator sets EMBEDDER (local, openai)');
  }
  return embedder;
}

/**
 * Embeds the non-blank texts with `embedNonBlank` and gives the zero vector to the blank ones, keeping the order.
 */
export async function embedNonBlank(
  texts: string[],
  dimensions: number,
  embedNonBlank: (texts: string[]) => Promise<number[][]>,
): Promise<number[][]> {
  const positions: number[] = [];
  const nonBlank: string[] = [];
  texts.forEach((text, i) => {
    if (text.trim() !== '') {
      positions.push(i);
      nonBlank.push(text);
    }
  });
  const out = texts.map(() => new Array<number>(dimensions).fill(0));
  if (nonBlank.length === 0) return out;
  const vectors = await embedNonBlank(nonBlank);
  positions.forEach((position, i) => {
    out[position] = vectors[i]!;
  });
  return out;
}
