import { type Db, newId, sql } from '@wds/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claimItem,
  completeItem,
  deleteItems,
  failItem,
  itemStatus,
  reportStuck,
  skipItem,
  upsertPending,
} from '../src/index.js';
import { newFile, newWorkspace, openTestDb } from './db.js';

let db: Db;
beforeAll(async () => {
  db = await openTestDb();
});
afterAll(() => db.destroy());

const item = (id: string) => db.selectFrom('platform.embedding_items').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const chunks = (id: string) =>
  db.selectFrom('platform.embedding_chunks').selectAll().where('item_id', '=', id).orderBy('chunk_index').execute();
const result = (contents: string[], dims = 3, model = 'm1') => ({
  model,
  dimensions: dims,
  contentHash: `hash of ${contents.length} chunks`,
  chunks: contents.map((content, i) => ({ content, embedding: Array.from({ length: dims }, (_, d) => (d === i % dims ? 2 : 0)) })),
});

describe('upsertPending', () => {
  it('inserts pending items with their target keys and returns ids in input order', async () => {
    const ws = await newWorkspace(db);
    const other = await newWorkspace(db);
    const file = await newFile(db, ws);
    const ids = await upsertPending(db, [
      { workspaceId: ws, surface: 'file', fileId: file },
      { workspaceId: ws, surface: 'table_row', tableName: 'orders', rowId: '42' },
      { workspaceId: ws, surface: 'column', tableName: 'orders', columnName: 'note', rowId: 'a:b' },
      { workspaceId: other, surface: 'table_row', tableName: 'orders', rowId: '42' },
      { workspaceId: ws, surface: 'table_row', tableName: 'orders', rowId: '42' }, // duplicate in one call
    ]);
    expect(new Set(ids).size).toBe(4);
    expect(ids[4]).toBe(ids[1]);
    const rows = await Promise.all(ids.slice(0, 4).map(item));
    expect(rows.map((r) => [r.workspace_id, r.surface, r.target_key, r.status, r.attempts])).toEqual([
      [ws, 'file', file, 'pending', 0],
      [ws, 'table_row', 'orders:42', 'pending', 0],
      [ws, 'column', 'orders.note:a:b', 'pending', 0],
      [other, 'table_row', 'orders:42', 'pending', 0],
    ]);
    expect(rows[0]).toMatchObject({ file_id: file, table_name: null, row_id: null, column_name: null });
    expect(rows[2]).toMatchObject({ file_id: null, table_name: 'orders', row_id: 'a:b', column_name: 'note' });
    expect(await upsertPending(db, [])).toEqual([]);
  });

  it('resets an existing item to pending, keeping its id, attempts and searchable chunks', async () => {
    const ws = await newWorkspace(db);
    const [id] = await upsertPending(db, [{ workspaceId: ws, surface: 'table_row', tableName: 't', rowId: '1' }]);
    const claim = (await claimItem(db, id!))!;
    await failItem(db, claim, 'boom');
    expect(await item(id!)).toMatchObject({ status: 'failed', error: 'boom', attempts: 1 });
    const [again] = await upsertPending(db, [{ workspaceId: ws, surface: 'table_row', tableName: 't', rowId: '1' }]);
    expect(again).toBe(id);
    expect(await item(id!)).toMatchObject({ status: 'pending', error: null, attempts: 1, started_at: null });

    await completeItem(db, id!, result(['one', 'two']), { useVector: false });
    await upsertPending(db, [{ workspaceId: ws, surface: 'table_row', tableName: 't', rowId: '1' }]);
    expect(await item(id!)).toMatchObject({ status: 'pending', completed_at: null, model: 'm1' });
    expect(await chunks(id!)).toHaveLength(2);
  });

  it('handles more items than one statement holds', async () => {
    const ws = await newWorkspace(db);
    const rows = Array.from({ length: 2500 }, (_, i) => ({ workspaceId: ws, surface: 'table_row' as const, tableName: 'big', rowId: String(i) }));
    const ids = await upsertPending(db, rows);
    expect(new Set(ids).size).toBe(2500);
    expect((await itemStatus(db, ws, 'table_row')).counts).toMatchObject({ pending: 2500, total: 2500 });
  });
});

describe('claimItem', () => {
  it('moves pending to processing once; concurrent claims have one winner', async () => {
    const ws = await newWorkspace(db);
    const [id] = await upsertPending(db, [{ workspaceId: ws, surface: 'table_row', tableName: 't', rowId: '1' }]);
    const claims = await Promise.all(Array.from({ length: 6 }, () => claimItem(db, id!)));
    const winners = claims.filter((c) => c !== null);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ id, status: 'processing', attempts: 1, target_key: 't:1', table_name: 't', row_id: '1' });
    expect(winners[0]!.started_at).toBeInstanceOf(Date);
    expect(await claimItem(db, id!)).toBeNull();
    expect(await claimItem(db, newId())).toBeNull();
    expect(await claimItem(db, 'not-a-uuid')).toBeNull();
  });
});

describe('completeItem', () => {
  it('stores normalised chunks and the model, replacing older chunks, in one go', async () => {
    const ws = await newWorkspace(db);
    const [id] = await upsertPending(db, [{ workspaceId: ws, surface: 'table_row', tableName: 't', rowId: '1' }]);
    const claim = (await claimItem(db, id!))!;
    expect(await completeItem(db, claim, result(['a', 'b', 'c\u0000d']), { useVector: false })).toBe(true);
    const row = await item(id!);
    expect(row).toMatchObject({ status: 'completed', error: null, model: 'm1', dimensions: 3, content_hash: 'hash of 3 chunks' });
    expect(row.completed_at).toBeInstanceOf(Date);
    const stored = await chunks(id!);
    expect(stored.map((c) => [c.chunk_index, c.content, c.workspace_id])).toEqual([
      [0, 'a', ws],
      [1, 'b', ws],
      [2, 'cd', ws],
    ]);
    expect(stored.map((c) => c.embedding)).toEqual([[1, 0, 0], [0, 1, 0], [0, 0, 1]]);

    // Re-embedding replaces the chunks: fewer now, and of another model and size.
    await upsertPending(db, [{ workspaceId: ws, surface: 'table_row', tableName: 't', rowId: '1' }]);
    const second = (await claimItem(db, id!))!;
    expect(second.attempts).toBe(2);
    expect(await completeItem(db, second, result(['only'], 4, 'm2'), { useVector: false })).toBe(true);
    expect((await chunks(id!)).map((c) => [c.content, c.embedding])).toEqual([['only', [1, 0, 0, 0]]]);
    expect(await item(id!)).toMatchObject({ model: 'm2', dimensions: 4 });
  });

  it('does nothing for a superseded claim: the item was reset or claimed again meanwhile', async () => {
    const ws = await newWorkspace(db);
    const target = { workspaceId: ws, surface: 'table_row' as const, tableName: 't', rowId: '1' };
    const [id] = await upsertPending(db, [target]);
    const first = (await claimItem(db, id!))!;
    await upsertPending(db, [target]); // the row changed while it was being embedded
    expect(await completeItem(db, first, result(['stale']), { useVector: false })).toBe(false);
    expect(await failItem(db, first, 'stale')).toBe(false);
    expect(await skipItem(db, first, 'stale')).toBe(false);
    expect(await item(id!)).toMatchObject({ status: 'pending' });
    const second = (await claimItem(db, id!))!;
    expect(await completeItem(db, first, result(['stale']), { useVector: false })).toBe(false); // attempts 1 ≠ 2
    expect(await chunks(id!)).toEqual([]);
    expect(await completeItem(db, second, result(['fresh']), { useVector: false })).toBe(true);
    expect((await chunks(id!)).map((c) => c.content)).toEqual(['fresh']);
  });

  it('accepts a bare id for a pending item (synchronous embedding) but not for a finished one', async () => {
    const ws = await newWorkspace(db);
    const [id] = await upsertPending(db, [{ workspaceId: ws, surface: 'column', tableName: 't', columnName: 'c', rowId: '9' }]);
    expect(await completeItem(db, id!, result(['value']), { useVector: false })).toBe(true);
    expect(await completeItem(db, id!, result(['again']), { useVector: false })).toBe(false);
    expect(await failItem(db, id!, 'x')).toBe(false);
    expect(await completeItem(db, newId(), result(['x']), { useVector: false })).toBe(false);
    expect(await completeItem(db, 'nope', result(['x']), { useVector: false })).toBe(false);
    expect((await chunks(id!)).map((c) => c.content)).toEqual(['value']);
  });

  it('rejects embeddings of the wrong size or with non-finite values, and writes nothing', async () => {
    const ws = await newWorkspace(db);
    const [id] = await upsertPending(db, [{ workspaceId: ws, surface: 'table_row', tableName: 't', rowId: '1' }]);
    const bad = { ...result(['a']), chunks: [{ content: 'a', embedding: [1, 0] }] };
    await expect(completeItem(db, id!, bad, { useVector: false })).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
    const nan = { ...result(['a']), chunks: [{ content: 'a', embedding: [1, Number.NaN, 0] }] };
    await expect(completeItem(db, id!, nan, { useVector: false })).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
    expect(await item(id!)).toMatchObject({ status: 'pending' });
  });
});

describe('failItem and skipItem', () => {
  it('fail keeps the last chunks; skip removes them; both record the reason', async () => {
    const ws = await newWorkspace(db);
    const target = { workspaceId: ws, surface: 'table_row' as const, tableName: 't', rowId: '1' };
    const [id] = await upsertPending(db, [target]);
    await completeItem(db, id!, result(['kept']), { useVector: false });
    await upsertPending(db, [target]);
    const claim = (await claimItem(db, id!))!;
    expect(await failItem(db, claim, `upstream said no ${'!'.repeat(3000)}`)).toBe(true);
    const failed = await item(id!);
    expect(failed).toMatchObject({ status: 'failed' });
    expect(failed.error!.length).toBe(2000);
    expect((await chunks(id!)).map((c) => c.content)).toEqual(['kept']);

    await upsertPending(db, [target]);
    expect(await skipItem(db, id!, 'image files need a multimodal model')).toBe(true);
    expect(await item(id!)).toMatchObject({ status: 'skipped', error: 'image files need a multimodal model' });
    expect(await chunks(id!)).toEqual([]);
  });
});

describe('reportStuck', () => {
  it('fails items processing for longer than the deadline and counts them', async () => {
    const ws = await newWorkspace(db);
    const [old, recent, pending] = await upsertPending(db, ['1', '2', '3'].map((rowId) => ({ workspaceId: ws, surface: 'table_row' as const, tableName: 'stuck', rowId })));
    const oldClaim = (await claimItem(db, old!))!;
    await claimItem(db, recent!);
    await sql`UPDATE platform.embedding_items SET started_at = now() - interval '11 minutes' WHERE id = ${old}`.execute(db);
    expect(await reportStuck(db, { olderThanMs: 10 * 60_000 })).toBe(1);
    expect(await item(old!)).toMatchObject({ status: 'failed', error: 'timed out after 10 min' });
    expect(await item(recent!)).toMatchObject({ status: 'processing' });
    expect(await item(pending!)).toMatchObject({ status: 'pending' });
    expect(await reportStuck(db, { olderThanMs: 10 * 60_000 })).toBe(0);
    // The worker that hung can no longer complete it.
    expect(await completeItem(db, oldClaim, result(['late']), { useVector: false })).toBe(false);
  });
});

describe('itemStatus and deleteItems', () => {
  it('counts per status and lists a page of items of one workspace and surface', async () => {
    const ws = await newWorkspace(db);
    const other = await newWorkspace(db);
    const [f1, f2] = [await newFile(db, ws, 'a.txt'), await newFile(db, ws, 'b.png')];
    const [i1, i2] = await upsertPending(db, [
      { workspaceId: ws, surface: 'file', fileId: f1 },
      { workspaceId: ws, surface: 'file', fileId: f2 },
    ]);
    const rows = await upsertPending(db, ['1', '2', '3', '4'].map((rowId) => ({ workspaceId: ws, surface: 'table_row' as const, tableName: rowId < '3' ? 'a' : 'b', rowId })));
    await upsertPending(db, [{ workspaceId: other, surface: 'file', fileId: await newFile(db, other) }]);
    await completeItem(db, i1!, result(['x', 'y']), { useVector: false });
    await skipItem(db, i2!, 'image');
    await claimItem(db, rows[0]!);
    await failItem(db, rows[1]!, 'bad');

    const files = await itemStatus(db, ws, 'file');
    expect(files.counts).toEqual({ pending: 0, processing: 0, completed: 1, failed: 0, skipped: 1, total: 2 });
    expect(files.items.map((i) => [i.id, i.file_id, i.status, i.error, i.chunk_count])).toEqual([
      [i1, f1, 'completed', null, 2],
      [i2, f2, 'skipped', 'image', 0],
    ]);
    expect(files.items[0]).toMatchObject({ surface: 'file', model: 'm1', dimensions: 3, attempts: 0 });
    expect(files.items[0]!.completed_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(files.items[1]!.completed_at).toBeNull();

    const tableA = await itemStatus(db, ws, 'table_row', { tableName: 'a' });
    expect(tableA.counts).toEqual({ pending: 0, processing: 1, completed: 0, failed: 1, skipped: 0, total: 2 });
    expect((await itemStatus(db, ws, 'table_row')).counts).toMatchObject({ pending: 2, total: 4 });
    expect((await itemStatus(db, ws, 'table_row', { targetKeys: ['b:4', 'zzz'] })).items.map((i) => i.row_id)).toEqual(['4']);
    expect((await itemStatus(db, ws, 'file', { fileIds: [f2, 'junk'] })).items.map((i) => i.id)).toEqual([i2]);
    expect((await itemStatus(db, ws, 'file', { fileIds: [] })).counts.total).toBe(0);
    const page = await itemStatus(db, ws, 'table_row', { limit: 2, offset: 1 });
    expect(page.items.map((i) => i.id)).toEqual(rows.slice(1, 3));
    expect(page.counts.total).toBe(4);
    expect((await itemStatus(db, ws, 'column')).counts.total).toBe(0);
  });

  it('deletes items with their chunks by filter, and a deleted file takes its item along', async () => {
    const ws = await newWorkspace(db);
    const file = await newFile(db, ws);
    const [fileItem] = await upsertPending(db, [{ workspaceId: ws, surface: 'file', fileId: file }]);
    const rows = await upsertPending(db, ['1', '2', '3'].map((rowId) => ({ workspaceId: ws, surface: 'table_row' as const, tableName: rowId === '3' ? 'keep' : 'drop', rowId })));
    for (const id of rows) await completeItem(db, id, result(['c']), { useVector: false });
    expect(await deleteItems(db, ws, 'table_row', { tableName: 'drop' })).toBe(2);
    expect(await chunks(rows[0]!)).toEqual([]);
    expect(await deleteItems(db, ws, 'table_row', { targetKeys: ['nothing'] })).toBe(0);
    expect(await deleteItems(db, ws, 'file', { tableName: 'keep' })).toBe(0); // another surface
    expect((await itemStatus(db, ws, 'table_row')).items.map((i) => i.id)).toEqual([rows[2]]);

    await db.deleteFrom('platform.files').where('id', '=', file).execute();
    expect(await db.selectFrom('platform.embedding_items').select('id').where('id', '=', fileItem!).execute()).toEqual([]);
  });
});
