export { SearchEmbedder } from './embedder.js';
export { EMBEDDING_QUEUE, type EmbeddingJob, type Enqueue, jobKey } from './jobs.js';
export { type ColumnDeps, type ColumnStatus, type SearchDeps, columnStatus, generateColumn, searchColumn } from './columns.js';
export { type FileDeps, type FileEmbedding, type FileHit, embedFiles, fileStatus, forgetFile, requeuePendingFiles, runFileJob, searchFiles } from './files.js';
export {
  type RowDeps,
  type RowHit,
  type TableEmbedding,
  embedTables,
  failTableRequest,
  requeueTableRequests,
  runTableJob,
  searchTables,
  tableStatus,
} from './rows.js';
export type { StatusCounts } from './status.js';
