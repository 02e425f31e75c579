/**
 * What the embedding surfaces and their jobs need of the service that runs them. The service passes its own
 * resources as they are (they fit these interfaces structurally); `embeddingDeps` turns them into the deps of
 * the surfaces.
 */
import type { Db } from '@wds/db';
import type { ExactVectorIndex } from '@wds/embeddings';
import type { BlobStore } from '@wds/storage';
import type { WorkspaceSql } from '@wds/workspace-sql';
import type { ColumnDeps, SearchDeps } from './columns.js';
import type { SearchEmbedder } from './embedder.js';
import type { FileDeps } from './files.js';
import { EMBEDDING_QUEUE, type EmbeddingJob, type Enqueue, jobKey } from './jobs.js';
import type { RowDeps } from './rows.js';

/** The configuration the embedding work reads (named as the service's environment names them). */
export interface EmbeddingConfig {
  SQL_STATEMENT_TIMEOUT_MS: number;
  SQL_MAX_ROWS: number;
  /** Files above this size are skipped. */
  EMBEDDING_MAX_FILE_BYTES: number;
  /** The deadline of one job attempt; processing items older than this are reported failed. */
  EMBEDDING_JOB_TIMEOUT_MS: number;
}

/** The job queue, for queueing (@wds/jobs `BackgroundJobs` fits). */
export interface EmbeddingQueue {
  /** With a key, not while another job with that key waits or runs; resolves whether one was queued. */
  enqueue(name: string, data: object, singletonKey?: string): Promise<boolean>;
}

/** What a job handler is given: its data, which attempt this is (1 first), and the signal of its deadline. */
export interface EmbeddingJobRun {
  data: unknown;
  attempt: number;
  signal: AbortSignal;
}

/** The job queue, for attaching handlers before it starts (@wds/jobs `BackgroundJobs` fits). */
export interface EmbeddingJobHandlers {
  handle(
    name: string,
    run: (job: EmbeddingJobRun) => Promise<void>,
    opts: { concurrency: number; expireInSeconds: number; retryLimit: number; onFailed?: (data: unknown, message: string) => Promise<void> },
  ): void;
}

export interface EmbeddingServices {
  db: Db;
  /** Workspace SQL (policies applied) for searches, and writes to workspace tables as the workspace's role. */
  sql: WorkspaceSql;
  blobs: BlobStore;
  config: EmbeddingConfig;
  /**
   * The configured embedder, whether vectors are stored with pgvector, and the process's in-memory index for exact
   * searches without it (absent: PostgreSQL scans).
   */
  embeddings: { embedder: SearchEmbedder; pgvector: boolean; index?: ExactVectorIndex };
  jobs: EmbeddingQueue;
  /** Drops a cache topic in every process: `ws:<id>` once a column was added, so table catalogs are read again. */
  invalidateEverywhere(topic: string): Promise<void>;
  logger: { warn(fields: object, msg: string): void };
}

export type EmbeddingDeps = FileDeps & RowDeps & ColumnDeps & SearchDeps;

/** Queues an embedding job under its key (a table's burst of changes queues one job). */
export const enqueueEmbedding =
  (jobs: EmbeddingQueue): Enqueue =>
  async (job: EmbeddingJob) => {
    await jobs.enqueue(EMBEDDING_QUEUE, job, jobKey(job));
  };

/** The deps of every embedding surface, on the service's resources. */
export function embeddingDeps(s: EmbeddingServices): EmbeddingDeps {
  return {
    db: s.db,
    sql: s.sql,
    limits: { statementTimeoutMs: s.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: s.config.SQL_MAX_ROWS },
    embedder: s.embeddings.embedder,
    pgvector: s.embeddings.pgvector,
    vectorIndex: s.embeddings.index,
    blobs: s.blobs,
    maxExtractBytes: s.config.EMBEDDING_MAX_FILE_BYTES,
    stuckAfterMs: s.config.EMBEDDING_JOB_TIMEOUT_MS,
    enqueue: enqueueEmbedding(s.jobs),
    writeAsWorkspace: (workspaceId, statements) => s.sql.writeAsWorkspace(workspaceId, statements),
    schemaChanged: (workspaceId) => s.invalidateEverywhere(`ws:${workspaceId}`),
  };
}
