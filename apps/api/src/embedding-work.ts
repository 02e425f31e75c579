/** The embedding surfaces wired to this server's services: one deps object, and the job handler. */
import {
  type ColumnDeps,
  type EmbeddingJob,
  EMBEDDING_QUEUE,
  embedFiles,
  failTableRequest,
  type FileDeps,
  jobKey,
  type RowDeps,
  runFileJob,
  runTableJob,
  type SearchDeps,
} from '@wds/semantic-search';
import { failItem } from '@wds/embeddings';
import { InvalidationBus } from '@wds/cache';
import { sql } from '@wds/db';
import { ServiceError } from '@wds/errors';
import type { Services } from './services.js';

export type EmbeddingDeps = FileDeps & RowDeps & ColumnDeps & SearchDeps;

export function embeddingDeps(s: Services): EmbeddingDeps {
  return {
    db: s.db,
    sql: s.sql,
    limits: { statementTimeoutMs: s.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: s.config.SQL_MAX_ROWS },
    embedder: s.embeddings.embedder,
    pgvector: s.embeddings.pgvector,
    blobs: s.blobs,
    maxExtractBytes: s.config.EMBEDDING_MAX_FILE_BYTES,
    stuckAfterMs: s.config.EMBEDDING_JOB_TIMEOUT_MS,
    enqueue: async (job) => {
      await s.jobs.enqueue(EMBEDDING_QUEUE, job, jobKey(job));
    },
    writeAsWorkspace: (workspaceId, statements) => s.sql.writeAsWorkspace(workspaceId, statements),
    schemaChanged: async (workspaceId) => {
      const topic = `ws:${workspaceId}`;
      await sql.raw(InvalidationBus.notifySql(topic, (x) => `'${x.replaceAll("'", "''")}'`)).execute(s.db);
      s.bus.invalidate(topic);
    },
  };
}

/** Attaches the embedding job handler to the server's job queue. */
export function handleEmbeddingJobs(s: Services): void {
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
        else {
          await sql`UPDATE platform.embedding_items SET status = 'failed', error = ${message}, updated_at = now()
                     WHERE workspace_id = ${job.workspaceId} AND surface = 'table_row' AND table_name = ${job.table}
                       AND status IN ('pending', 'processing')`.execute(s.db);
          await failTableRequest(s.db, job.workspaceId, job.table, message);
        }
      },
    },
  );
}

/** With `auto_embed_files`, an uploaded file starts embedding; an upload never fails because of it. */
export async function autoEmbedFile(s: Services, workspace: { id: string; auto_embed_files: boolean }, fileId: string): Promise<void> {
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
export async function autoEmbedRows(s: Services, workspace: { id: string; auto_embed_tables: boolean }, tables: string[]): Promise<void> {
  if (!workspace.auto_embed_tables || !s.embeddings.embedder.embedder) return;
  const deps = embeddingDeps(s);
  for (const table of tables) {
    await deps.enqueue({ kind: 'table', workspaceId: workspace.id, table }).catch((err: Error) => {
      s.logger.warn({ err: err.message, table }, 'auto-embed of changed rows could not be queued');
    });
  }
}
