import { type Db, createDb, newId, sql } from '@wds/db';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ExactVectorIndexOptions,
  type SearchOptions,
  ExactVectorIndex,
  completeItem,
  deleteItems,
  l2Normalise,
  searchChunks,
  surfaceBytes,
  upsertPending,
} from '../src/index.js';
import { BinaryCopyParser } from '../src/exact-index/copy-out.js';
import { toRealArrayLiteral } from '../src/vector.js';
import { openTestDatabase } from './db.js';
import { randomUnitVector, seededRandom } from './fixtures.js';

/**
 * The in-process index against the SQL exact scan it replaces: the same answers on random data (ties, items of
 * several chunks, filters, vectors of another size), current after another connection changes the chunks, and
 * bounded in memory.
 */
const DIMS = 96;
const SMALL = 16;
const random = seededRandom(16_016);

let db: Db;
let pool: pg.Pool;
let url: string;
/** A second connection, standing for another process (the worker that writes chunks). */
let other: { db: Db; pool: pg.Pool };
const indexes: ExactVectorIndex[] = [];

function newIndex(options: Partial<ExactVectorIndexOptions> = {}): ExactVectorIndex {
  const index = new ExactVectorIndex({ pool, threads: 3, onError: (err) => console.error(err), ...options });
  indexes.push(index);
  return index;
}

const W = newId();
const V = newId(); // another workspace, with the same surfaces
const files: string[] = [];
const tied = randomUnitVector(random, DIMS); // three rows share it, and one file has it in three chunks
const queries = Array.from({ length: 6 }, () => randomUnitVector(random, DIMS));

interface Row {
  workspaceId: string;
  surface: 'file' | 'table_row';
  fileId?: string;
  tableName?: string;
  rowId?: string;
  model: string;
  chunks: number[][];
}

function nudge(v: number[], by = 0.05): number[] {
  return l2Normalise(v.map((x) => x + (random() - 0.5) * by));
}

/**
 * Items and chunks written in bulk (the triggers see the same statements as from completeItem, in larger batches);
 * with `reversed`, each item's chunks are written last first (they are then read out of chunk order).
 */
async function write(target: Db, rows: Row[], { reversed = false } = {}): Promise<string[]> {
  const ids = rows.map(() => newId());
  for (let i = 0; i < rows.length; i += 500) {
    const part = rows.slice(i, i + 500);
    await target
      .insertInto('platform.embedding_items')
      .values(
        part.map((r, j) => ({
          id: ids[i + j]!,
          workspace_id: r.workspaceId,
          surface: r.surface,
          file_id: r.fileId ?? null,
          table_name: r.tableName ?? null,
          row_id: r.rowId ?? null,
          target_key: r.fileId ?? `${r.tableName}:${r.rowId}`,
          status: 'completed' as const,
          model: r.model,
          dimensions: r.chunks[0]!.length,
        })),
      )
      .execute();
    const chunks = part.flatMap((r, j) => {
      const values = r.chunks.map((v, c) => sql`(${ids[i + j]}, ${c}, ${r.workspaceId}, ${`${r.fileId ?? `${r.tableName}:${r.rowId}`} #${c}`}, ${toRealArrayLiteral(l2Normalise(v))}::real[])`);
      return reversed ? values.reverse() : values;
    });
    await sql`INSERT INTO platform.embedding_chunks (item_id, chunk_index, workspace_id, content, embedding) VALUES ${sql.join(chunks)}`.execute(target);
  }
  return ids;
}

beforeAll(async () => {
  ({ db, pool, url } = await openTestDatabase());
  other = createDb(url, { max: 2 });
  await db.insertInto('platform.workspaces').values([{ id: W, name: 'w' }, { id: V, name: 'v' }]).execute();
  const rows: Row[] = [];
  for (let i = 0; i < 400; i++) {
    const fileId = newId();
    files.push(fileId);
    const small = i % 40 === 3;
    rows.push({
      workspaceId: W,
      surface: 'file',
      fileId,
      model: small ? 'small' : i % 7 === 0 ? 'm2' : 'm1',
      chunks: Array.from({ length: 1 + (i % 4) }, () => randomUnitVector(random, small ? SMALL : DIMS)),
    });
  }
  // One file's three chunks are all `tied`: its first chunk is its best.
  rows[200]!.chunks = [tied, tied, tied];
  await db
    .insertInto('platform.files')
    .values(files.map((id) => ({ id, workspace_id: W, filename: 'f', content_type: 'text/plain', size: 1, sha256: '0', blob_key: id, metadata: '{}', created_by: null })))
    .execute();
  const tables = ['orders', 'notes', 'misc'];
  for (let i = 0; i < 6000; i++) {
    const near = i % 50 === 0 ? queries[i % queries.length]! : undefined;
    rows.push({
      workspaceId: W,
      surface: 'table_row',
      tableName: tables[i % 3]!,
      rowId: String(i),
      model: i % 11 === 0 ? 'm2' : 'm1',
      chunks: Array.from({ length: 1 + (i % 2) }, () => (near ? nudge(near) : randomUnitVector(random, DIMS))),
    });
  }
  // Ties between items: three rows far apart in id order (so in different slices) have the same vector.
  for (const i of [17, 3001, 5998]) rows[400 + i]!.chunks = [randomUnitVector(random, DIMS), tied];
  // The other workspace's rows lie on the queries: they must never show up in W.
  for (const [i, q] of queries.entries()) rows.push({ workspaceId: V, surface: 'table_row', tableName: 'orders', rowId: `v${i}`, model: 'm1', chunks: [q] });
  await write(db, rows);
  // One row's chunks are written last first, and its first and last tie: the first must win.
  await write(db, [{ workspaceId: W, surface: 'table_row', tableName: 'orders', rowId: 'reversed', model: 'm1', chunks: [queries[5]!, randomUnitVector(random, DIMS), queries[5]!] }], { reversed: true });
  await sql`ANALYZE platform.embedding_chunks, platform.embedding_items`.execute(db);
}, 120_000);

afterAll(async () => {
  await Promise.all(indexes.map((i) => i.close()));
  await other?.db.destroy();
  await db?.destroy();
});

/** Both paths: the index's answer must equal the SQL scan's in every field (scores bit for bit). */
async function expectSame(index: ExactVectorIndex, options: Omit<SearchOptions, 'useVector' | 'index'>, label = '') {
  const before = index.stats().fallbacks;
  const viaIndex = await searchChunks(db, { ...options, useVector: false, index });
  const viaSql = await searchChunks(db, { ...options, useVector: false });
  expect(viaIndex, label).toEqual(viaSql);
  expect(index.stats().fallbacks, `${label}: answered by the index`).toBe(before);
  return viaIndex;
}

describe('ExactVectorIndex', () => {
  it('answers exactly as the SQL scan: best chunk per item, ties by item id, every limit', async () => {
    const index = newIndex();
    for (const [qi, vector] of [...queries, tied, nudge(tied, 0.01)].entries()) {
      for (const surface of ['file', 'table_row'] as const) {
        for (const limit of [1, 10, 57, 10_000]) {
          const hits = await expectSame(index, { workspaceId: W, surface, vector, limit }, `query ${qi} ${surface} ${limit}`);
          expect(hits.length).toBe(Math.min(limit, surface === 'file' ? 390 : 6001));
        }
      }
    }
    const ties = await expectSame(index, { workspaceId: W, surface: 'table_row', vector: tied, limit: 3 });
    expect(ties.map((h) => h.score)).toEqual([ties[0]!.score, ties[0]!.score, ties[0]!.score]);
    expect(ties.map((h) => h.item_id)).toEqual(ties.map((h) => h.item_id).sort());
    expect(ties.map((h) => h.chunk_index)).toEqual([1, 1, 1]);
    const [file] = await expectSame(index, { workspaceId: W, surface: 'file', vector: tied, limit: 1 });
    expect(file).toMatchObject({ file_id: files[200], chunk_index: 0 });
    const [reversed] = await expectSame(index, { workspaceId: W, surface: 'table_row', vector: queries[5]!, limit: 1 });
    expect(reversed).toMatchObject({ row_id: 'reversed', chunk_index: 0, content: 'orders:reversed #0' });
    // One load per surface, the rest from memory; rows split over the threads.
    expect(index.stats()).toMatchObject({ loads: 2, surfaces: 2, fallbacks: 0, threads: 3 });
  });

  it('applies the filters as SQL does: files, tables, model, and vectors of another size', async () => {
    // One thread: its slice spans several windows of the kernel, with items across their edges.
    const index = newIndex({ threads: 1 });
    const some = files.filter((_, i) => i % 3 === 0);
    const cases: Omit<SearchOptions, 'useVector'>[] = [
      { workspaceId: W, surface: 'file', vector: queries[0]!, limit: 20, fileIds: some },
      { workspaceId: W, surface: 'file', vector: queries[0]!, limit: 20, fileIds: [...some.slice(0, 5).map((f) => f.toUpperCase()), 'not-a-uuid'] },
      { workspaceId: W, surface: 'file', vector: queries[1]!, limit: 20, model: 'm2' },
      { workspaceId: W, surface: 'table_row', vector: queries[2]!, limit: 30, tableNames: ['orders', 'nope'] },
      { workspaceId: W, surface: 'table_row', vector: queries[3]!, limit: 30, tableNames: ['notes'], model: 'm2' },
      { workspaceId: W, surface: 'table_row', vector: queries[4]!, limit: 30, model: 'm1' },
      { workspaceId: W.toUpperCase(), surface: 'table_row', vector: queries[5]!, limit: 10 },
      { workspaceId: W, surface: 'file', vector: randomUnitVector(random, SMALL), limit: 20 },
      { workspaceId: W, surface: 'file', vector: randomUnitVector(random, SMALL), limit: 3, model: 'small' },
    ];
    for (const options of cases) {
      const hits = await expectSame(index, options, JSON.stringify({ ...options, vector: options.vector.length }));
      expect(hits.length).toBeGreaterThan(0);
    }
    for (const empty of [
      { workspaceId: W, surface: 'file' as const, vector: queries[0]!, limit: 20, fileIds: [] },
      { workspaceId: W, surface: 'table_row' as const, vector: queries[0]!, limit: 20, tableNames: ['nope'] },
      { workspaceId: W, surface: 'table_row' as const, vector: queries[0]!, limit: 20, model: 'nope' },
      { workspaceId: W, surface: 'column' as const, vector: queries[0]!, limit: 20 },
      { workspaceId: W, surface: 'file' as const, vector: [1, 2, 3], limit: 20 },
    ]) {
      expect(await searchChunks(db, { ...empty, useVector: false, index })).toEqual([]);
    }
    // The other workspace's rows sit on the queries, and are found there only.
    const canary = await expectSame(index, { workspaceId: V, surface: 'table_row', vector: queries[2]!, limit: 10 });
    expect(canary[0]!.row_id).toBe('v2');
    expect(canary.every((h) => h.row_id!.startsWith('v'))).toBe(true);
    const mine = await searchChunks(db, { workspaceId: W, surface: 'table_row', vector: queries[2]!, limit: 6000, useVector: false, index });
    expect(mine.some((h) => h.row_id?.startsWith('v'))).toBe(false);
  });

  it('is current after another connection inserts, updates and deletes chunks', async () => {
    const index = newIndex();
    const probe = randomUnitVector(random, DIMS);
    const options = { workspaceId: W, surface: 'table_row' as const, vector: probe, limit: 5 };
    const first = await expectSame(index, options);
    expect(first[0]!.score).toBeLessThan(0.9);

    // Insert: another process completes an item whose chunk lies on the probe.
    const [fresh] = await upsertPending(other.db, [{ workspaceId: W, surface: 'table_row', tableName: 'orders', rowId: 'fresh' }]);
    await completeItem(other.db, fresh!, { model: 'm1', dimensions: DIMS, contentHash: null, chunks: [{ content: 'fresh', embedding: probe }] }, { useVector: false });
    const inserted = await expectSame(index, options);
    expect(inserted[0]).toMatchObject({ row_id: 'fresh', content: 'fresh' });

    // Update: the chunk's vector moves away, and its content changes.
    await sql`UPDATE platform.embedding_chunks SET embedding = ${toRealArrayLiteral(l2Normalise(probe.map((x) => -x)))}::real[], content = 'moved'
              WHERE item_id = ${fresh}`.execute(other.db);
    const updated = await expectSame(index, options);
    expect(updated.map((h) => h.row_id)).not.toContain('fresh');

    // An item's model changes (what the model filter sees).
    await upsertPending(other.db, [{ workspaceId: W, surface: 'table_row', tableName: 'orders', rowId: 'fresh' }]);
    await completeItem(other.db, fresh!, { model: 'm1', dimensions: DIMS, contentHash: null, chunks: [{ content: 'again', embedding: probe }] }, { useVector: false });
    expect((await expectSame(index, { ...options, model: 'm1' }))[0]!.row_id).toBe('fresh');
    await sql`UPDATE platform.embedding_items SET model = 'm3' WHERE id = ${fresh}`.execute(other.db);
    expect((await expectSame(index, { ...options, model: 'm1' })).map((h) => h.row_id)).not.toContain('fresh');
    expect((await expectSame(index, { ...options, model: 'm3' })).map((h) => h.row_id)).toEqual(['fresh']);

    // Delete: the item goes (its chunks by cascade), then a chunk of another item directly.
    expect(await deleteItems(other.db, W, 'table_row', { targetKeys: ['orders:fresh'] })).toBe(1);
    expect((await expectSame(index, options)).map((h) => h.row_id)).toEqual(first.map((h) => h.row_id));
    await sql`DELETE FROM platform.embedding_chunks WHERE item_id = ${first[0]!.item_id}`.execute(other.db);
    expect((await expectSame(index, options)).map((h) => h.item_id)).not.toContain(first[0]!.item_id);

    // Status changes do not make it reload.
    const loads = index.stats().loads;
    await sql`UPDATE platform.embedding_items SET status = 'failed', error = 'x' WHERE workspace_id = ${W} AND row_id = '5'`.execute(other.db);
    await expectSame(index, options);
    expect(index.stats().loads).toBe(loads);
  });

  it('never returns content other than what it scored: a winner changed behind its generation goes to SQL', async () => {
    const index = newIndex();
    const options = { workspaceId: W, surface: 'file' as const, vector: queries[3]!, limit: 3 };
    const before = await expectSame(index, options);
    // The winner's chunk is rewritten while its generation is put back: the copy looks current, but is not.
    const { rows } = await sql<{ generation: number }>`
      SELECT generation FROM platform.embedding_generations WHERE workspace_id = ${W} AND surface = 'file'`.execute(other.db);
    await sql`UPDATE platform.embedding_chunks SET content = 'rewritten' WHERE item_id = ${before[0]!.item_id}`.execute(other.db);
    await sql`UPDATE platform.embedding_generations SET generation = ${rows[0]!.generation} WHERE workspace_id = ${W} AND surface = 'file'`.execute(other.db);
    const hits = await searchChunks(db, { ...options, useVector: false, index });
    expect(hits).toEqual(await searchChunks(db, { ...options, useVector: false }));
    expect(hits[0]!.content).toBe('rewritten');
    expect(index.stats().fallbacks).toBe(1);
  });

  it('loads a cold surface once for concurrent searches', async () => {
    const index = newIndex();
    const options = queries.map((vector) => ({ workspaceId: W, surface: 'table_row' as const, vector, limit: 10, useVector: false }));
    const [viaIndex, viaSql] = await Promise.all([
      Promise.all(options.map((o) => searchChunks(db, { ...o, index }))),
      Promise.all(options.map((o) => searchChunks(db, o))),
    ]);
    expect(viaIndex).toEqual(viaSql);
    expect(index.stats()).toMatchObject({ loads: 1, fallbacks: 0 });
  });

  it('a failed load is not remembered: that search runs in SQL, the next one loads', async () => {
    let failures = 1;
    const errors: unknown[] = [];
    const flaky = {
      connect: () => (failures-- > 0 ? Promise.reject(new Error('no connection for you')) : pool.connect()),
      query: pool.query.bind(pool),
    } as unknown as pg.Pool;
    const index = newIndex({ pool: flaky, onError: (err) => errors.push(err) });
    const options = { workspaceId: W, surface: 'file' as const, vector: queries[0]!, limit: 10, useVector: false };
    const want = await searchChunks(db, options);
    expect(await searchChunks(db, { ...options, index })).toEqual(want);
    expect(errors).toHaveLength(1);
    expect(index.stats()).toMatchObject({ loads: 0, fallbacks: 1 });
    expect(await searchChunks(db, { ...options, index })).toEqual(want);
    expect(index.stats()).toMatchObject({ loads: 1, fallbacks: 1, surfaces: 1 });
  });

  it('keeps within its memory limit: least recently used surfaces go, a surface over the limit is searched in SQL', async () => {
    const count = async (surface: string) => {
      const { rows } = await sql<{ rows: number; items: number }>`
        SELECT (SELECT count(*)::int FROM platform.embedding_chunks c JOIN platform.embedding_items i ON i.id = c.item_id
                 WHERE c.workspace_id = ${W} AND i.surface = ${surface} AND array_length(c.embedding, 1) = ${DIMS}) AS rows,
               (SELECT count(*)::int FROM platform.embedding_items WHERE workspace_id = ${W} AND surface = ${surface}) AS items`.execute(db);
      return surfaceBytes(rows[0]!.rows, rows[0]!.items, DIMS, 3);
    };
    const fileBytes = await count('file');
    const rowBytes = await count('table_row');
    expect(fileBytes).toBeLessThan(rowBytes);

    // Room for the rows' copy, not for both.
    const index = newIndex({ maxBytes: rowBytes + fileBytes - 1 });
    const file = { workspaceId: W, surface: 'file' as const, vector: queries[1]!, limit: 10 };
    const row = { workspaceId: W, surface: 'table_row' as const, vector: queries[1]!, limit: 10 };
    await expectSame(index, file);
    expect(index.stats()).toMatchObject({ loads: 1, surfaces: 1, bytes: fileBytes });
    await expectSame(index, row);
    expect(index.stats()).toMatchObject({ loads: 2, surfaces: 1, bytes: rowBytes });
    await expectSame(index, file);
    expect(index.stats()).toMatchObject({ loads: 3, surfaces: 1, bytes: fileBytes });
    expect(index.stats().bytes).toBeLessThanOrEqual(index.maxBytes);

    // Room for the files only: the rows are searched in SQL, with the same answer, and nothing is evicted for them.
    const small = newIndex({ maxBytes: fileBytes });
    await expectSame(small, file);
    for (let i = 0; i < 2; i++) {
      const viaIndex = await searchChunks(db, { ...row, useVector: false, index: small });
      expect(viaIndex).toEqual(await searchChunks(db, { ...row, useVector: false }));
    }
    expect(small.stats()).toMatchObject({ loads: 1, surfaces: 1, bytes: fileBytes, fallbacks: 2 });

    // 0 turns it off.
    const off = newIndex({ maxBytes: 0 });
    expect(await searchChunks(db, { ...file, useVector: false, index: off })).toEqual(await searchChunks(db, { ...file, useVector: false }));
    expect(off.stats()).toMatchObject({ loads: 0, fallbacks: 1 });
  });

  it('after close, searches run in SQL and the threads are gone', async () => {
    const index = newIndex();
    const options = { workspaceId: W, surface: 'file' as const, vector: queries[2]!, limit: 10, useVector: false };
    await searchChunks(db, { ...options, index });
    expect(index.stats().surfaces).toBe(1);
    await index.close();
    expect(index.stats()).toMatchObject({ surfaces: 0, bytes: 0 });
    expect(await searchChunks(db, { ...options, index })).toEqual(await searchChunks(db, options));
    expect(index.stats().loads).toBe(1);
  });

  it('a workspace can still be deleted; its generations go with it', async () => {
    const X = newId();
    await db.insertInto('platform.workspaces').values({ id: X, name: 'x' }).execute();
    await write(db, [{ workspaceId: X, surface: 'table_row', tableName: 't', rowId: '1', model: 'm1', chunks: [queries[0]!] }]);
    const index = newIndex();
    const options = { workspaceId: X, surface: 'table_row' as const, vector: queries[0]!, limit: 10 };
    expect(await expectSame(index, options)).toHaveLength(1);
    await sql`DELETE FROM platform.workspaces WHERE id = ${X}`.execute(other.db);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM platform.embedding_generations WHERE workspace_id = ${X}`.execute(db);
    expect(rows[0]!.n).toBe(0);
    // No generation: the index declines, and SQL finds nothing.
    expect(await searchChunks(db, { ...options, useVector: false, index })).toEqual([]);
  });
});

describe('BinaryCopyParser', () => {
  it('reads tuples whatever the message boundaries, NULLs included', () => {
    const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
    const tuple = (a: number, b: string | null) => {
      const text = b === null ? null : Buffer.from(b);
      const parts = [Buffer.from([0, 2]), Buffer.from([0, 0, 0, 4]), Buffer.alloc(4)];
      parts[2]!.writeInt32BE(a);
      const length = Buffer.alloc(4);
      length.writeInt32BE(text ? text.length : -1);
      parts.push(length);
      if (text) parts.push(text);
      return Buffer.concat(parts);
    };
    const stream = Buffer.concat([header, tuple(1, 'one'), tuple(-7, null), tuple(3, ''), Buffer.from([0xff, 0xff])]);
    for (const size of [1, 2, 3, 5, 7, stream.length]) {
      const seen: [number, string | null][] = [];
      const parser = new BinaryCopyParser(2, (buf, starts, lengths) => {
        seen.push([buf.readInt32BE(starts[0]!), lengths[1] === -1 ? null : buf.toString('utf8', starts[1]!, starts[1]! + lengths[1]!)]);
      });
      for (let i = 0; i < stream.length; i += size) parser.push(stream.subarray(i, i + size));
      parser.finish();
      expect(seen, `messages of ${size} bytes`).toEqual([[1, 'one'], [-7, null], [3, '']]);
    }
    const cut = new BinaryCopyParser(2, () => {});
    cut.push(stream.subarray(0, 30));
    expect(() => cut.finish()).toThrow(/ended early/);
  });
});
