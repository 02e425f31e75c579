import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { type Db, migrateToLatest, newId, sql, asUuid } from '@wds/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SearchHit,
  type SearchOptions,
  completeItem,
  detectVectorSupport,
  ensureVectorIndex,
  searchChunks,
  upsertPending,
} from '../src/index.js';
import { nearestChunks } from '../src/store/search.js';
import { openTestDb } from './db.js';
import { randomUnitVector, seededRandom } from './fixtures.js';
import { pgliteDb } from './pglite-dialect.js';

/**
 * The same data in the CI PostgreSQL (real[], exact scan) and in PGlite with pgvector (HNSW index), searched on
 * both paths and checked against an exact computation in JavaScript.
 */
const DIMS = 384;
const random = seededRandom(20240607);
const A = newId();
const B = newId(); // the canary workspace: its items lie next to every query of A and must never show up there
const C = newId(); // one file of 450 chunks near the crowd query crowds out every other item among the nearest chunks

interface Item {
  workspaceId: string;
  surface: 'file' | 'table_row';
  fileId?: string;
  tableName?: string;
  rowId?: string;
  model: string;
  chunks: { content: string; embedding: number[] }[];
}

const files = Array.from({ length: 150 }, () => newId());
const items: Item[] = [
  ...files.map((fileId, i) => ({
    workspaceId: A,
    surface: 'file' as const,
    fileId,
    model: 'test-model',
    chunks: Array.from({ length: 1 + (i % 3) }, (_, c) => ({ content: `file ${i} chunk ${c}`, embedding: randomUnitVector(random, DIMS) })),
  })),
  ...Array.from({ length: 100 }, (_, i) => ({
    workspaceId: A,
    surface: 'table_row' as const,
    tableName: i % 2 ? 'orders' : 'notes',
    rowId: String(i),
    model: i === 7 ? 'other-model' : 'test-model',
    chunks: [{ content: `row ${i}`, embedding: randomUnitVector(random, DIMS) }],
  })),
];
const queries = [
  ...Array.from({ length: 4 }, () => randomUnitVector(random, DIMS)),
  // Queries near a stored chunk, as real queries resemble documents: the second chunk of file 4, and row 10.
  nudge(items[4]!.chunks[1]!.embedding),
  nudge(items[160]!.chunks[0]!.embedding),
];
// B's rows are the queries themselves: a perfect score, in another workspace.
const canaryFiles = queries.map(() => newId());
items.push(
  ...queries.map((q, i) => ({
    workspaceId: B,
    surface: 'file' as const,
    fileId: canaryFiles[i]!,
    model: 'test-model',
    chunks: [{ content: 'CANARY of workspace B', embedding: q }],
  })),
);

const crowdQuery = randomUnitVector(random, DIMS);
const crowdFile = newId();
items.push(
  {
    workspaceId: C,
    surface: 'file',
    fileId: crowdFile,
    model: 'test-model',
    chunks: Array.from({ length: 450 }, (_, c) => ({ content: `crowd chunk ${c}`, embedding: nudge(crowdQuery) })),
  },
  ...Array.from({ length: 30 }, () => ({
    workspaceId: C,
    surface: 'file' as const,
    fileId: newId(),
    model: 'test-model',
    chunks: [{ content: 'small', embedding: randomUnitVector(random, DIMS) }],
  })),
);

function nudge(v: number[]): number[] {
  const noisy = v.map((x) => x + (random() - 0.5) * 0.02);
  const n = Math.hypot(...noisy);
  return noisy.map((x) => x / n);
}

const keyOf = (hit: Pick<SearchHit, 'file_id' | 'table_name' | 'row_id'>) => hit.file_id ?? `${hit.table_name}:${hit.row_id}`;
const itemKey = (item: Item) => item.fileId ?? `${item.tableName}:${item.rowId}`;

/** The exact answer: best chunk per item by dot product of the float32-stored vectors. */
function expected(options: Omit<SearchOptions, 'useVector'>): { key: string; score: number; chunk: number }[] {
  const q = options.vector;
  return items
    .filter(
      (item) =>
        item.workspaceId === options.workspaceId &&
        item.surface === options.surface &&
        (!options.fileIds || options.fileIds.includes(item.fileId!)) &&
        (!options.tableNames || options.tableNames.includes(item.tableName!)) &&
        (!options.model || options.model === item.model),
    )
    .map((item) => {
      const scores = item.chunks.map((c) => c.embedding.reduce((s, x, i) => s + Math.fround(x) * q[i]!, 0));
      const best = scores.indexOf(Math.max(...scores));
      return { key: itemKey(item), score: scores[best]!, chunk: best };
    })
    .sort((x, y) => y.score - x.score)
    .slice(0, options.limit);
}

async function load(db: Db, useVector: boolean): Promise<void> {
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }, { id: C, name: 'c' }]).execute();
  const fileRows = items
    .filter((i) => i.fileId)
    .map((i) => ({ id: i.fileId!, workspace_id: i.workspaceId, filename: 'f', content_type: 'text/plain', size: 1, sha256: '0', blob_key: i.fileId!, metadata: '{}', created_by: null }));
  await db.insertInto('platform.files').values(fileRows).execute();
  const ids = await upsertPending(
    db,
    items.map((i) =>
      i.surface === 'file'
        ? { workspaceId: i.workspaceId, surface: 'file' as const, fileId: i.fileId! }
        : { workspaceId: i.workspaceId, surface: 'table_row' as const, tableName: i.tableName!, rowId: i.rowId! },
    ),
  );
  for (const [n, item] of items.entries()) {
    await completeItem(db, ids[n]!, { model: item.model, dimensions: DIMS, contentHash: null, chunks: item.chunks }, { useVector });
  }
}

let pgDb: Db;
let pglite: PGlite;
let liteDb: Db;

beforeAll(async () => {
  const started = Date.now();
  [pgDb, pglite] = await Promise.all([openTestDb(), PGlite.create({ extensions: { vector } })]);
  liteDb = pgliteDb(pglite);
  await migrateToLatest(liteDb);
  expect(await detectVectorSupport(liteDb)).toBe(true);
  await Promise.all([load(pgDb, true), load(liteDb, true)]);
  // Building the index over loaded rows is 5x faster than growing it row by row (the write path is tested below).
  expect(await ensureVectorIndex(liteDb, DIMS)).toBe('created');
  // So few rows would be sorted exactly; the planner must take the HNSW index for these tests to mean something.
  await pglite.exec('ANALYZE; SET enable_sort = off;');
  console.info(`[search] set-up with ${items.length} items in ${Date.now() - started} ms`);
});
afterAll(async () => {
  await pgDb?.destroy();
  await pglite?.close();
});

describe('detectVectorSupport and ensureVectorIndex', () => {
  it('plain PostgreSQL without pgvector says no (yes where the server has it)', async () => {
    const { rows } = await sql<{ available: boolean }>`
      SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available`.execute(pgDb);
    expect(await detectVectorSupport(pgDb)).toBe(rows[0]!.available);
  });

  it('PGlite has the column, the HNSW index and a vector for every chunk; a second call changes nothing', async () => {
    expect(await ensureVectorIndex(liteDb, DIMS)).toBe('unchanged');
    // With the column in place, completing an item writes its vectors, and the index finds it.
    const [id] = await upsertPending(liteDb, [{ workspaceId: B, surface: 'table_row', tableName: 'late', rowId: '1' }]);
    const late = randomUnitVector(random, DIMS);
    const embedding = { model: 'test-model', dimensions: DIMS, contentHash: null, chunks: [{ content: 'late', embedding: late }] };
    expect(await completeItem(liteDb, id!, embedding, { useVector: true })).toBe(true);
    const hits = await searchChunks(liteDb, { workspaceId: B, surface: 'table_row', vector: late, limit: 1, useVector: true });
    expect(hits.map((h) => [h.row_id, h.content])).toEqual([['1', 'late']]);
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    const { rows } = await sql<{ total: number; with_vector: number }>`
      SELECT count(*)::int AS total, count(embedding_v)::int AS with_vector FROM platform.embedding_chunks`.execute(liteDb);
    expect(rows[0]!.with_vector).toBe(rows[0]!.total);
    const index = await sql<{ indexdef: string }>`
      SELECT indexdef FROM pg_indexes WHERE indexname = 'embedding_chunks_embedding_v_hnsw'`.execute(liteDb);
    expect(index.rows[0]!.indexdef).toMatch(/USING hnsw \(embedding_v vector_cosine_ops\)/);
  });

  it('the indexed query is answered by the HNSW index', async () => {
    const query = nearestChunks({ workspaceId: A, surface: 'file', vector: queries[0]!, limit: 10, useVector: true }, queries[0]!, 40);
    const compiled = query.compile(liteDb);
    const plan = await pglite.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${compiled.sql}`, [...compiled.parameters]);
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Index Scan using embedding_chunks_embedding_v_hnsw/);
  });

  it('a surface of at most EXACT_SCAN_MAX_CHUNKS is scanned exactly, not through the index', async () => {
    const query = nearestChunks({ workspaceId: A, surface: 'file', vector: queries[0]!, limit: 10, useVector: true }, queries[0]!, 40, { exact: true });
    const compiled = query.compile(liteDb);
    const plan = await pglite.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${compiled.sql}`, [...compiled.parameters]);
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).not.toMatch(/embedding_chunks_embedding_v_hnsw/);
  });
});

/**
 * The index holds under 1000 chunks, so a search this wide visits them all and must agree exactly with the exact
 * scan on random vectors. At the default (100), recall@10 on these random 384-d vectors is about 92%; the tests on
 * near and crowded queries below use the default.
 */
const WIDE = 1000;

describe('searchChunks', () => {
  const paths = () =>
    [
      ['PostgreSQL exact', pgDb, false],
      ['PostgreSQL, useVector without pgvector', pgDb, true],
      ['PGlite HNSW', liteDb, true],
      ['PGlite exact', liteDb, false],
    ] as const;

  it('every path returns the exact top 10 of files, with the best chunk and cosine scores', async () => {
    for (const [qi, q] of queries.entries()) {
      const options = { workspaceId: A, surface: 'file' as const, vector: q, limit: 10 };
      const want = expected(options);
      for (const [name, db, useVector] of paths()) {
        const hits = await searchChunks(db, { ...options, useVector, efSearch: WIDE, exactScanMaxChunks: 0 });
        expect(hits.map(keyOf), `${name}, query ${qi}`).toEqual(want.map((w) => w.key));
        for (const [i, hit] of hits.entries()) {
          expect(Math.abs(hit.score - want[i]!.score), `${name} score`).toBeLessThan(1e-5);
          expect(hit.chunk_index).toBe(want[i]!.chunk);
          expect(hit.content).toBe(`file ${files.indexOf(asUuid(hit.file_id!))} chunk ${hit.chunk_index}`);
          expect(hit).toMatchObject({ table_name: null, row_id: null, column_name: null });
        }
      }
    }
    // The query near file 4's second chunk finds that chunk first.
    const near = await searchChunks(liteDb, { workspaceId: A, surface: 'file', vector: queries[4]!, limit: 1, useVector: true });
    expect(near[0]).toMatchObject({ file_id: files[4], chunk_index: 1, content: 'file 4 chunk 1' });
    expect(near[0]!.score).toBeGreaterThan(0.95);
  });

  it('with pgvector, a small surface is answered exactly by default, even with a narrow index search', async () => {
    for (const [qi, q] of queries.entries()) {
      const options = { workspaceId: A, surface: 'file' as const, vector: q, limit: 10 };
      const hits = await searchChunks(liteDb, { ...options, useVector: true, efSearch: 1 });
      expect(hits.map(keyOf), `query ${qi}`).toEqual(expected(options).map((w) => w.key));
    }
  });

  it('filters by files, tables and model the same way on every path', async () => {
    const some = files.filter((_, i) => i % 5 === 0);
    const cases: Omit<SearchOptions, 'useVector'>[] = [
      { workspaceId: A, surface: 'file', vector: queries[1]!, limit: 10, fileIds: [...some, 'not-a-uuid'] },
      { workspaceId: A, surface: 'file', vector: queries[1]!, limit: 10, fileIds: [] },
      { workspaceId: A, surface: 'table_row', vector: queries[2]!, limit: 10, tableNames: ['orders'] },
      { workspaceId: A, surface: 'table_row', vector: queries[5]!, limit: 5 },
      { workspaceId: A, surface: 'table_row', vector: queries[3]!, limit: 100, model: 'test-model' },
    ];
    for (const options of cases) {
      const want = expected(options).map((w) => w.key);
      for (const [name, db, useVector] of paths()) {
        const hits = await searchChunks(db, { ...options, useVector, efSearch: WIDE, exactScanMaxChunks: 0 });
        expect(hits.map(keyOf), `${name} ${JSON.stringify({ ...options, vector: undefined })}`).toEqual(want);
      }
    }
    const rows = await searchChunks(liteDb, { workspaceId: A, surface: 'table_row', vector: queries[5]!, limit: 1, useVector: true });
    expect(rows[0]).toMatchObject({ table_name: 'notes', row_id: '10', content: 'row 10', file_id: null });
  });

  it('returns each item once even when the limit exceeds the items, and never another workspace', async () => {
    for (const [name, db, useVector] of paths()) {
      const all = await searchChunks(db, { workspaceId: A, surface: 'file', vector: queries[0]!, limit: 1000, useVector });
      expect(all, name).toHaveLength(150);
      expect(new Set(all.map((h) => h.item_id)).size).toBe(150);
      expect(all.some((h) => h.content.includes('CANARY'))).toBe(false);
      expect(all.map((h) => h.score)).toEqual([...all.map((h) => h.score)].sort((x, y) => y - x));
      const canary = await searchChunks(db, { workspaceId: B, surface: 'file', vector: queries[0]!, limit: 10, useVector });
      expect(canary.map((h) => h.file_id)).toEqual(expected({ workspaceId: B, surface: 'file', vector: queries[0]!, limit: 10 }).map((w) => w.key));
      expect(canary[0]!.score).toBeCloseTo(1, 5);
    }
  });

  it('finds the other items when one item has more near chunks than the first candidate list holds', async () => {
    const options = { workspaceId: C, surface: 'file' as const, vector: crowdQuery, limit: 10 };
    const want = expected(options);
    expect(want[0]!.key).toBe(crowdFile);
    expect(want).toHaveLength(10);
    for (const [name, db, useVector] of paths()) {
      const hits = await searchChunks(db, { ...options, useVector });
      expect(hits.map(keyOf), name).toEqual(want.map((w) => w.key));
      expect(hits[0]!.content).toBe(`crowd chunk ${want[0]!.chunk}`);
    }
  });

  it('a blank query, a zero limit or a vector of another size match nothing', async () => {
    for (const [, db, useVector] of paths()) {
      const base = { workspaceId: A, surface: 'file' as const, limit: 10, useVector };
      expect(await searchChunks(db, { ...base, vector: new Array(DIMS).fill(0) })).toEqual([]);
      expect(await searchChunks(db, { ...base, vector: queries[0]!, limit: 0 })).toEqual([]);
      expect(await searchChunks(db, { ...base, vector: [1, 0, 0] })).toEqual([]);
    }
  });
});

describe('ensureVectorIndex with another size', () => {
  it('rebuilds the column; other-sized chunks fall back to the exact path; changing back restores the index', async () => {
    expect(await ensureVectorIndex(liteDb, 8)).toBe('rebuilt');
    const [id] = await upsertPending(liteDb, [{ workspaceId: A, surface: 'table_row', tableName: 'small', rowId: '1' }]);
    const small = [1, 2, 3, 4, 5, 6, 7, 8];
    await completeItem(liteDb, id!, { model: 'tiny', dimensions: 8, contentHash: null, chunks: [{ content: 'tiny', embedding: small }] }, { useVector: true });
    const { rows } = await sql<{ dims: number; with_vector: number }>`
      SELECT array_length(embedding, 1) AS dims, count(embedding_v)::int AS with_vector
      FROM platform.embedding_chunks GROUP BY 1 ORDER BY 1`.execute(liteDb);
    expect(rows).toEqual([{ dims: 8, with_vector: 1 }, { dims: DIMS, with_vector: 0 }]);
    const tiny = await searchChunks(liteDb, { workspaceId: A, surface: 'table_row', vector: small, limit: 5, useVector: true });
    expect(tiny.map((h) => [h.row_id, h.content])).toEqual([['1', 'tiny']]);
    expect(tiny[0]!.score).toBeCloseTo(1, 5);

    // 384-d queries now scan exactly, with the same answer.
    const options = { workspaceId: A, surface: 'file' as const, vector: queries[1]!, limit: 10, efSearch: WIDE, exactScanMaxChunks: 0 };
    expect((await searchChunks(liteDb, { ...options, useVector: true })).map(keyOf)).toEqual(expected(options).map((w) => w.key));

    expect(await ensureVectorIndex(liteDb, DIMS)).toBe('rebuilt');
    const back = await sql<{ total: number; with_vector: number }>`
      SELECT count(*)::int AS total, count(embedding_v)::int AS with_vector
      FROM platform.embedding_chunks WHERE array_length(embedding, 1) = ${DIMS}`.execute(liteDb);
    expect(back.rows[0]!.with_vector).toBe(back.rows[0]!.total);
    expect(back.rows[0]!.total).toBeGreaterThan(items.length);
    expect((await searchChunks(liteDb, { ...options, useVector: true })).map(keyOf)).toEqual(expected(options).map((w) => w.key));
  });
});
