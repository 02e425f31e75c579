/**
 * The embedder EMBEDDER names (docs/embeddings.md#embedders-embedder), whether this database stores vectors with
 * pgvector, and the in-process index of exact searches (EMBEDDING_INDEX_MAX_BYTES; it takes memory and threads only
 * once a search uses it).
 */
import { ExactVectorIndex, createEmbedder, detectVectorSupport, ensureVectorIndex } from '@wds/embeddings';
import type { Db } from '@wds/db';
import type { Metrics } from '@wds/metrics';
import { SearchEmbedder } from '@wds/semantic-search';
import type pg from 'pg';
import type { Config } from './config.js';
import type { Logger } from './logger.js';

export async function createEmbeddings(
  config: Config,
  db: Db,
  resources: { pool: pg.Pool; logger: Logger; metrics?: Metrics },
): Promise<{ embedder: SearchEmbedder; pgvector: boolean; index: ExactVectorIndex }> {
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
  const index = new ExactVectorIndex({
    pool: resources.pool,
    maxBytes: config.EMBEDDING_INDEX_MAX_BYTES,
    onError: (err, surface) => resources.logger.warn({ err, ...surface }, 'in-process vector search failed; searched in SQL'),
  });
  const metrics = resources.metrics;
  if (embedder && metrics) {
    // Every vector (chunks of files, documents, rows; search queries) comes from this one `embed`: counted here.
    const inner = embedder;
    embedder = Object.assign(Object.create(inner) as typeof inner, {
      embed: async (texts: string[]) => {
        const t = performance.now();
        const vectors = await inner.embed(texts);
        metrics.embedded(inner.kind, texts.length, (performance.now() - t) / 1000);
        return vectors;
      },
    });
  }
  return { embedder: new SearchEmbedder(embedder), pgvector, index };
}
