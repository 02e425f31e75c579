export { type Embedder, type EmbedderConfig, requireEmbedder } from './embedders/embedder.js';
export { createEmbedder } from './embedders/index.js';
export { HASHING_DEFAULT_DIMENSIONS, HASHING_MODEL } from './embedders/hashing.js';
export { LOCAL_DIMENSIONS, LOCAL_MODEL } from './embedders/local.js';
export type { OpenAiEmbedderConfig } from './embedders/openai.js';
export { type ExtractedText, extractText } from './extract/index.js';
export { jsonToText } from './extract/json.js';
export { type ChunkOptions, DEFAULT_MAX_CHARS, DEFAULT_OVERLAP, type TextChunk, chunkText } from './chunk.js';
export {
  type CompletedEmbedding,
  type EmbeddingItemView,
  type EmbeddingStatusSummary,
  type EmbeddingTarget,
  type ItemFilter,
  type ItemRef,
  type PendingItem,
  type StatusCounts,
  claimItem,
  completeItem,
  deleteItems,
  failItem,
  itemStatus,
  reportStuck,
  skipItem,
  targetKey,
  upsertPending,
} from './store/items.js';
export { HNSW_MAX_DIMENSIONS, detectVectorSupport, ensureVectorIndex } from './store/pgvector.js';
export { EXACT_SCAN_MAX_CHUNKS, type SearchHit, type SearchOptions, searchChunks } from './store/search.js';
export {
  DEFAULT_INDEX_MAX_BYTES,
  ExactVectorIndex,
  type ExactVectorIndexOptions,
  type ExactVectorIndexStats,
} from './exact-index/vector-index.js';
export { CHUNK_OVERHEAD_BYTES, ITEM_BYTES, surfaceBytes } from './exact-index/load.js';
export { dot, l2Normalise } from './vector.js';
