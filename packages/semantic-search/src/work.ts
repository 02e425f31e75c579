/**
 * The background side of the file and table-row surfaces on a service: the job handler of the embeddings queue,
 * the embedding that uploads and row changes start on their own, and the sweeps that queue again what lost its job.
 */
import { failItem } from '@wds/embeddings';
import { ServiceError } from '@wds/errors';
import { embedFiles, requeuePendingFiles, runFileJob } from './files.js';
import { EMBEDDING_QUEUE, type EmbeddingJob } from './jobs.js';
import { failTableJob, requeueTableRequests, runTableJob } from './rows.js';
import { type EmbeddingJobHandlers, type EmbeddingQueue, type EmbeddingServices, embeddingDeps, enqueueEmbedding } from './services.js';

/** Attaches the embedding job handler to the service's job queue (before it starts). */
export function handleEmbeddingJobs(s: EmbeddingServices & { jobs: EmbeddingJobHandlers }): void {
  const deps = embeddingDeps(s);
  s.jobs.handle(
    EMBEDDING_QUEUE,
    async ({ data, attempt, signal }) => {
      const job = data as EmbeddingJob;
      // A retry takes over items the failed or crashed attempt left in processing.
      const retry = attempt > 1;
      if (job.kind === 'file') await runFileJob(deps, job.itemId, retry);
      else await runTableJob(deps, job.workspaceId, job.table, retry, signal);
    },
    {
      concurrency: 1,
      // The most one attempt may take while its process lives; a crashed one is retried once its heartbeat (kept
      // by the job queue while the handler runs) is stale, long before this.
      expireInSeconds: Math.ceil(s.config.EMBEDDING_JOB_TIMEOUT_MS / 1000),
      retryLimit: 2,
      onFailed: async (data, message) => {
        const job = data as EmbeddingJob;
        if (job.kind === 'file') await failItem(s.db, job.itemId, message);
        else await failTableJob(s.db, job.workspaceId, job.table, message);
      },
    },
  );
}

/** With `auto_embed_files`, an uploaded file starts embedding; an upload never fails because of it. */
export async function autoEmbedFile(s: EmbeddingServices, workspace: { id: string; auto_embed_files: boolean }, fileId: string): Promise<void> {
  if (!workspace.auto_embed_files || !s.embeddings.embedder.embedder) return;
  try {
    await embedFiles(embeddingDeps(s), workspace.id, [fileId], false);
  } catch (err) {
    // An image with a text model is recorded as skipped; anything else is worth a warning, not a failed upload.
    if (!(err instanceof ServiceError && err.code === 'MODEL_NOT_MULTIMODAL')) {
      s.logger.warn({ err: (err as Error).message, file_id: fileId }, 'auto-embed of an uploaded file failed');
    }
  }
}

/** With `auto_embed_tables`, changed rows are embedded again by their table's job. */
export async function autoEmbedRows(
  s: Pick<EmbeddingServices, 'embeddings' | 'jobs' | 'logger'>,
  workspace: { id: string; auto_embed_tables: boolean },
  tables: string[],
): Promise<void> {
  if (!workspace.auto_embed_tables || !s.embeddings.embedder.embedder) return;
  const enqueue = enqueueEmbedding(s.jobs);
  for (const table of tables) {
    await enqueue({ kind: 'table', workspaceId: workspace.id, table }).catch((err: Error) => {
      s.logger.warn({ err: err.message, table }, 'auto-embed of changed rows could not be queued');
    });
  }
}

/**
 * The maintenance sweeps of the embedding surfaces (none without an embedder): table requests and file items whose
 * job never came are queued again, every `intervalMs`, once older than that.
 */
export function embeddingSweeps(
  s: Pick<EmbeddingServices, 'db' | 'embeddings'> & { jobs: EmbeddingQueue },
  intervalMs: number,
): { name: string; intervalMs: number; run: () => Promise<number> }[] {
  if (!s.embeddings.embedder.embedder) return [];
  const enqueue = enqueueEmbedding(s.jobs);
  return [
    {
      name: 'table embedding requests without a job',
      intervalMs,
      run: () => requeueTableRequests(s.db, enqueue, { olderThanMs: intervalMs }),
    },
    {
      name: 'file embeddings pending without a job',
      intervalMs,
      run: () => requeuePendingFiles(s.db, enqueue, { olderThanMs: intervalMs }),
    },
  ];
}
