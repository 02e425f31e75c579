/** The background work of the file and table-row surfaces, as the job queue carries it. */
export type EmbeddingJob = { kind: 'file'; workspaceId: string; itemId: string } | { kind: 'table'; workspaceId: string; table: string };

export const EMBEDDING_QUEUE = 'embeddings';

/** Jobs of one table share a key, so a burst of row changes queues one job behind the running one, not many. */
export const jobKey = (job: EmbeddingJob): string => (job.kind === 'file' ? `file:${job.itemId}` : `table:${job.workspaceId}:${job.table}`);

export type Enqueue = (job: EmbeddingJob) => Promise<void>;
