import * as v from 'valibot';
import { JsonObject, NonNegative, Uuid } from './common.js';

/** The views of semantic search and embedding jobs. */
/** How many items of the workspace's embeddings are in each state (@wds/semantic-search StatusCounts). */
export const EmbeddingCounts = v.object({
  pending: NonNegative,
  processing: NonNegative,
  completed: NonNegative,
  failed: NonNegative,
  skipped: NonNegative,
});
/** search_files: the best-matching passage of each file with its cosine similarity (-1 to 1). */
export const FileSearchResult = v.object({
  results: v.array(
    v.object({ file_id: Uuid, filename: v.string(), content_type: v.string(), score: v.number(), chunk_index: NonNegative, content: v.string() }),
  ),
  status: EmbeddingCounts,
});
/** search_tables: rows the caller may read, most similar first. */
export const TableSearchResult = v.object({
  results: v.array(v.object({ table_name: v.string(), score: v.number(), row: JsonObject })),
  status: EmbeddingCounts,
});
