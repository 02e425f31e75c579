import { ServiceError } from '@wds/errors';
import type { Embedder, EmbedderConfig } from './embedder.js';
import { createHashingEmbedder } from './hashing.js';
import { createLocalEmbedder } from './local.js';
import { createOpenAiEmbedder } from './openai.js';

/** The embedder of `config`; null for `{ kind: 'none' }` (pass it through `requireEmbedder` where one is needed). */
export function createEmbedder(config: { kind: 'none' }): null;
export function createEmbedder(config: Exclude<EmbedderConfig, { kind: 'none' }>): Embedder;
export function createEmbedder(config: EmbedderConfig): Embedder | null;
export function createEmbedder(config: EmbedderConfig): Embedder | null {
  switch (config.kind) {
    case 'local':
      return createLocalEmbedder();
    case 'openai':
      return createOpenAiEmbedder(config);
    case 'hashing':
      return createHashingEmbedder(config.dimensions);
    case 'none':
      return null;
    default: {
      // Configuration may come from the environment, so a kind outside the union is possible at run time.
      const unknown: never = config;
      throw new ServiceError('EMBEDDING_NOT_CONFIGURED', `Unknown embedder kind ${String((unknown as { kind: unknown }).kind)}`);
    }
  }
}
