import '@wds/testkit';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createEmbedder } from '@wds/embeddings';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EMBEDDING_QUEUE, type EmbeddingJobRun, type EmbeddingServices, SearchEmbedder, embeddingSweeps, handleEmbeddingJobs } from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const ws = newId();

beforeAll(async () => {
  ({ db } = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'semantic_jobs' }), { max: 2 }));
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: ws, name: 'ws' }).execute();
});
afterAll(async () => {
  await db?.destroy();
});

type Registered = { name: string; run: (job: EmbeddingJobRun) => Promise<void>; opts: { onFailed?: (data: unknown, message: string) => Promise<void> } };

/** The service as the embedding work sees it, with a job queue that records what is attached and queued. */
function service(embedder: 'hashing' | 'none' = 'hashing') {
  const handlers: Registered[] = [];
  const queued: { name: string; data: object; key: string | undefined }[] = [];
  const s = {
    db,
    sql: undefined as unknown as EmbeddingServices['sql'],
    blobs: undefined as unknown as EmbeddingServices['blobs'],
    config: { SQL_STATEMENT_TIMEOUT_MS: 10_000, SQL_MAX_ROWS: 100, EMBEDDING_MAX_FILE_BYTES: 1024, EMBEDDING_JOB_TIMEOUT_MS: 90_500 },
    embeddings: { embedder: new SearchEmbedder(createEmbedder({ kind: embedder })), pgvector: false },
    jobs: {
      enqueue: async (name: string, data: object, key?: string) => {
        queued.push({ name, data, key });
        return true;
      },
      handle: (name: string, run: Registered['run'], opts: Registered['opts']) => void handlers.push({ name, run, opts }),
    },
    invalidateEverywhere: async () => {},
    logger: { warn: () => {} },
  };
  return { s, handlers, queued };
}

const rowItem = (table: string, row: string, status: 'pending' | 'processing' | 'completed') => ({
  id: newId(),
  workspace_id: ws,
  surface: 'table_row' as const,
  table_name: table,
  row_id: row,
  target_key: `${table}:${row}`,
  status,
});

describe('the embedding job handler', () => {
  it('attaches to the embeddings queue with the configured deadline', () => {
    const { s, handlers } = service();
    handleEmbeddingJobs(s);
    expect(handlers.map((h) => [h.name, (h.opts as { expireInSeconds: number }).expireInSeconds])).toEqual([[EMBEDDING_QUEUE, 91]]);
  });

  it("a table job that failed for good fails its unfinished rows and its request, whatever the message's quotes", async () => {
    const { s, handlers } = service();
    handleEmbeddingJobs(s);
    await db
      .insertInto('platform.embedding_items')
      .values([rowItem('notes', '1', 'pending'), rowItem('notes', '2', 'processing'), rowItem('notes', '3', 'completed'), rowItem('other', '1', 'pending')])
      .execute();
    await db.insertInto('platform.embedding_tables').values({ workspace_id: ws, table_name: 'notes' }).execute();

    const message = "it's gone; '); DROP TABLE platform.embedding_items; --";
    await handlers[0]!.opts.onFailed!({ kind: 'table', workspaceId: ws, table: 'notes' }, message);

    const items = await db.selectFrom('platform.embedding_items').select(['table_name', 'row_id', 'status', 'error']).where('workspace_id', '=', ws).orderBy('table_name').orderBy('row_id').execute();
    expect(items).toEqual([
      { table_name: 'notes', row_id: '1', status: 'failed', error: message },
      { table_name: 'notes', row_id: '2', status: 'failed', error: message },
      { table_name: 'notes', row_id: '3', status: 'completed', error: null },
      { table_name: 'other', row_id: '1', status: 'pending', error: null },
    ]);
    const request = await db.selectFrom('platform.embedding_tables').select(['failed_at', 'error']).where('workspace_id', '=', ws).executeTakeFirstOrThrow();
    expect(request.error).toBe(message);
    expect(request.failed_at).not.toBeNull();
  });
});

describe('the embedding sweeps', () => {
  it('are none without an embedder, and queue lost work under its job key otherwise', async () => {
    expect(embeddingSweeps(service('none').s, 60_000)).toEqual([]);
    const { s, queued } = service();
    await db.insertInto('platform.embedding_tables').values({ workspace_id: ws, table_name: 'lost', requested_at: new Date(Date.now() - 60_000) }).execute();
    const sweeps = embeddingSweeps(s, 1000);
    expect(sweeps.map((t) => [t.name, t.intervalMs])).toEqual([
      ['table embedding requests without a job', 1000],
      ['file embeddings pending without a job', 1000],
    ]);
    expect(await sweeps[0]!.run()).toBe(1);
    expect(queued).toEqual([{ name: EMBEDDING_QUEUE, data: { kind: 'table', workspaceId: ws, table: 'lost' }, key: `table:${ws}:lost` }]);
  });
});
