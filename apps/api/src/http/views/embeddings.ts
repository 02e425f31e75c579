import * as v from 'valibot';
import { JsonObject, NonNegative, Timestamp, Uuid } from './common.js';

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

/** generate_column_embeddings: rows embedded by this call, and whether `<column>_embedding` was added by it. */
export const ColumnEmbeddingsGenerated = v.object({
  generated_count: NonNegative,
  column_added: v.boolean(),
  /** The vector column: `<column_name>_embedding`. */
  embedding_column: v.string(),
});
/** get_column_embedding_status: each embedded text column of the table, with its row counts (@wds/semantic-search ColumnStatus). */
export const ColumnEmbeddingStatus = v.object({
  table_name: v.string(),
  columns: v.array(
    v.object({
      column_name: v.string(),
      embedding_column: v.string(),
      /** Live rows with text in the column. */
      total_rows: NonNegative,
      /** Rows whose vector matches their current text. */
      embedded_rows: NonNegative,
      /** Rows without a vector or whose text changed since: what the next generate embeds. */
      pending_rows: NonNegative,
    }),
  ),
});
/** search_column_embeddings: rows the caller may read (embedding columns left out), most similar first. */
export const ColumnSearchResult = v.object({
  results: v.array(v.object({ score: v.number(), row: JsonObject })),
});

/** One file's embedding state (@wds/semantic-search FileEmbedding). */
const FileEmbedding = v.object({
  file_id: Uuid,
  filename: v.string(),
  status: v.picklist(['pending', 'processing', 'completed', 'failed', 'skipped']),
  /** Why it failed or was skipped. */
  error: v.nullable(v.string()),
  updated_at: Timestamp,
});
/** get_file_embedding_status: every live file with an embedding item, most recently changed first, and the counts per state. */
export const FileEmbeddingStatus = v.object({
  counts: EmbeddingCounts,
  files: v.array(FileEmbedding),
});
/** embed_files and regenerate_file_embeddings: the state of the requested files once queued (or skipped). */
export const FileEmbeddingsQueued = v.object({
  files: v.array(FileEmbedding),
});
/**
 * get_table_embedding_status, embed_tables and regenerate_table_embeddings: per table (every embedded table, or the
 * requested ones) its live rows and how many are embedded, pending and failed (@wds/semantic-search TableEmbedding).
 */
export const TableEmbeddingStatus = v.object({
  tables: v.array(
    v.object({
      table_name: v.string(),
      /** Live rows of the table (0 once it was dropped). */
      total_rows: NonNegative,
      embedded_rows: NonNegative,
      pending_rows: NonNegative,
      failed_rows: NonNegative,
      status: v.picklist(['pending', 'processing', 'completed', 'failed']),
    }),
  ),
});
