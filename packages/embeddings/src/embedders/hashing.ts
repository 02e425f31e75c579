import { ServiceError } from '@wds/errors';
import { l2Normalise } from '../vector.js';
import { type Embedder, embedNonBlank } from './embedder.js';

export const HASHING_MODEL = 'feature-hashing-v1';
export const HASHING_DEFAULT_DIMENSIONS = 384;

/**
 * Feature hashing of word unigrams, word bigrams and character 3-grams (of each word with its boundaries) into
 * `dimensions` signed buckets, L2-normalised. Deterministic and dependency-free; it measures lexical overlap, not
 * meaning ("car" and "automobile" share nothing).
 */
export function createHashingEmbedder(dimensions = HASHING_DEFAULT_DIMENSIONS): Embedder {
  if (!Number.isInteger(dimensions) || dimensions < 2 || dimensions > 16_000) {
    throw new ServiceError('EMBEDDING_NOT_CONFIGURED', 'Hashing embedder dimensions must be an integer from 2 to 16000');
  }
  return {
    kind: 'hashing',
    model: HASHING_MODEL,
    dimensions,
    multimodal: false,
    embed: async (texts) => embedNonBlank(texts, dimensions, async (nonBlank) => nonBlank.map((t) => hashText(t, dimensions))),
  };
}

const WORD = /[\p{L}\p{N}]+/gu;

export function hashText(text: string, dimensions: number): number[] {
  const v = new Float64Array(dimensions);
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    // Low bits choose the bucket, the top bit the sign, so that collisions cancel out on average.
    v[h % dimensions]! += h & 0x80000000 ? -weight : weight;
  };
  const words = text.toLowerCase().match(WORD) ?? [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    add(`w:${word}`, 1);
    if (i > 0) add(`b:${words[i - 1]} ${word}`, 1);
    const padded = [...` ${word} `];
    for (let j = 0; j + 3 <= padded.length; j++) add(`c:${padded.slice(j, j + 3).join('')}`, 0.5);
  }
  return l2Normalise(v);
}

/** 32-bit FNV-1a over UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
