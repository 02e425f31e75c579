/** The embedder EMBEDDER names (DECISIONS §8), and whether this database stores vectors with pgvector. */
import { createEmbedder, detectVectorSupport, ensureVectorIndex } from '@wds/embeddings';
import type { Db } from '@wds/db';
import { SearchEmbedder } from '@wds/semantic-search';
import type { Config } from './config.js';

export async function createEmbeddings(config: Config, db: Db): Promise<{ embedder: SearchEmbedder; pgvector: boolean }> {
  let embedder: ReturnType<typeof createEmbedder>;
  switch (config.EMBEDDER) {
    case 'openai':
      if (!config.EMBEDDING_BASE_URL) throw new Error('Invalid configuration: EMBEDDER=openai needs EMBEDDING_BASE_URL');
      embedder = createEmbedder({
        kind: 'openai',
        baseUrl: config.EMBEDDING_BASE_URL,
        model: config.EMBEDDING_MODEL,
        dimensions: config.EMBEDDING_DIMENSIONS,
        timeoutMs: config.EMBEDDING_TIMEOUT_MS,
        ...(config.EMBEDDING_API_KEY ? { apiKey: config.EMBEDDING_API_KEY } : {}),
      });
      break;
    case 'hashing':
      embedder = createEmbedder({ kind: 'hashing' });
      break;
    case 'none':
      embedder = createEmbedder({ kind: 'none' });
      break;
    default:
      embedder = createEmbedder({ kind: 'local' });
  }
  const pgvector = embedder ? await detectVectorSupport(db) : false;
  if (pgvector && embedder) await ensureVectorIndex(db, embedder.dimensions);
  return { embedder: new SearchEmbedder(embedder), pgvector };
}
