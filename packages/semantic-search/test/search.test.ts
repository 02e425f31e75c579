import '@wds/testkit';
import { type Db, createDb, migrateToLatest, newId } from '@wds/db';
import { ExactVectorIndex, completeItem, createEmbedder, upsertPending } from '@wds/embeddings';
import { createDatabase } from '@wds/testkit';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type EmbeddingServices, type FileDeps, SearchEmbedder, embeddingDeps, searchFiles } from '../src/index.js';

/** Without pgvector, a file search goes through the process's in-memory index when the service has one. */
let db: Db;
let pool: pg.Pool;
let index: ExactVectorIndex;
const ws = newId();
const embedder = new SearchEmbedder(createEmbedder({ kind: 'hashing' }));
const texts = ['invoices of the spring quarter', 'the cat sat on the warm mat', 'quarterly invoice totals for spring', 'a recipe for onion soup'];

beforeAll(async () => {
  ({ db, pool } = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'semantic_search' }), { max: 3 }));
  await migrateToLatest(db);
  index = new ExactVectorIndex({ pool, threads: 1 });
  await db.insertInto('platform.workspaces').values({ id: ws, name: 'ws' }).execute();
  const fileIds = texts.map(() => newId());
  await db
    .insertInto('platform.files')
    .values(fileIds.map((id, i) => ({ id, workspace_id: ws, filename: `f${i}.txt`, content_type: 'text/plain', size: 1, sha256: '0', blob_key: id, metadata: '{}', created_by: null })))
    .execute();
  const ids = await upsertPending(db, fileIds.map((fileId) => ({ workspaceId: ws, surface: 'file' as const, fileId })));
  const vectors = await embedder.embedAll(texts);
  const model = embedder.require();
  for (const [i, id] of ids.entries()) {
    await completeItem(db, id, { model: model.model, dimensions: model.dimensions, contentHash: null, chunks: [{ content: texts[i]!, embedding: vectors[i]! }] }, { useVector: false });
  }
});
afterAll(async () => {
  await index?.close();
  await db?.destroy();
});

const deps = (vectorIndex?: ExactVectorIndex): FileDeps => ({
  db,
  blobs: undefined as unknown as FileDeps['blobs'],
  embedder,
  pgvector: false,
  vectorIndex,
  enqueue: async () => {},
  maxExtractBytes: 1024,
  stuckAfterMs: 60_000,
});

describe('searchFiles', () => {
  it('answers from the index what SQL answers', async () => {
    for (const query of ['spring invoices', 'cat on a mat', 'soup']) {
      const viaIndex = await searchFiles(deps(index), ws, query, 3);
      expect(viaIndex).toEqual(await searchFiles(deps(), ws, query, 3));
      expect(viaIndex.results.length).toBe(3);
    }
    const invoices = await searchFiles(deps(index), ws, 'spring invoices', 2);
    expect(invoices.results.map((r) => r.content).sort()).toEqual([texts[0], texts[2]]);
    expect(index.stats()).toMatchObject({ loads: 1, fallbacks: 0 });
  });

  it("embeddingDeps hands the service's index to the surfaces", () => {
    const services = { db, config: {}, embeddings: { embedder, pgvector: false, index }, jobs: {} } as unknown as EmbeddingServices;
    expect(embeddingDeps(services).vectorIndex).toBe(index);
  });
});
