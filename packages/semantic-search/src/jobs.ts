/** The background work of the file and table-row surfaces, as the job queue carries it. */
export type EmbeddingJob = { kind: 'file'; workspaceId: string; itemId: string } | { kind: 'table'; workspaceId: string; table: string };

export const EMBEDDING_QUEUE = 'embeddings';

/**
 * Jobs of one table share a key, so a burst of row changes queues one job, not many (changes made while it runs
 * are picked up by its last pass). File jobs have none: a file regenerated while its job runs needs a second job
 * (the first one's result is fenced off), and a duplicate delivery finds the item no longer pending and stops.
 */
export const jobKey = (job: EmbeddingJob): string | undefined => (job.kind === 'file' ? undefined : `table:${job.workspaceId}:${job.table}`);

export type Enqueue = (job: EmbeddingJob) => Promise<void>;
