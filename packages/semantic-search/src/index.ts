export { SearchEmbedder } from './embedder.js';
export { EMBEDDING_QUEUE, type EmbeddingJob, type Enqueue, jobKey } from './jobs.js';
export { type ColumnDeps, type ColumnStatus, type SearchDeps, columnStatus, generateColumn, searchColumn } from './columns.js';
export { type FileDeps, type FileEmbedding, type FileHit, embedFiles, fileStatus, forgetFile, requeuePendingFiles, runFileJob, searchFiles } from './files.js';
export {
  type RowDeps,
  type RowHit,
  type TableEmbedding,
  embedTables,
  failTableJob,
  failTableRequest,
  requeueTableRequests,
  runTableJob,
  searchTables,
  tableStatus,
} from './rows.js';
export type { StatusCounts } from './status.js';
export {
  type EmbeddingConfig,
  type EmbeddingDeps,
  type EmbeddingJobHandlers,
  type EmbeddingJobRun,
  type EmbeddingQueue,
  type EmbeddingServices,
  embeddingDeps,
  enqueueEmbedding,
} from './services.js';
export { autoEmbedFile, autoEmbedRows, embeddingSweeps, handleEmbeddingJobs } from './work.js';
export { type FileText, type FileTextDeps, extractFileText } from './text.js';
