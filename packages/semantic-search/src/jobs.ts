/** The background work of the file and table-row surfaces, as the job queue carries it. */
export type EmbeddingJob = { kind: 'file'; workspaceId: string; itemId: string } | { kind: 'table'; workspaceId: string; table: string };

export const EMBEDDING_QUEUE = 'embeddings';

/**
 * Jobs of one table share a key, so a burst of row changes queues one job, not many (changes made while it runs
 * are picked up by its last pass). A file item's jobs share a key too, so the requeue sweep never doubles a job
 * that waits; a file regenerated while its job runs gets no second job at once (the first one's result is fenced
 * off) but is pending afterwards, which the sweep (requeuePendingFiles) queues again.
 */
export const jobKey = (job: EmbeddingJob): string => (job.kind === 'file' ? `file:${job.itemId}` : `table:${job.workspaceId}:${job.table}`);

export type Enqueue = (job: EmbeddingJob) => Promise<void>;
