import '@wds/testkit';
import { createDb, type Db, migrateToLatest, newId, asUuid, type Uuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, expectTypeOf, inject, it } from 'vitest';
import { getFile, insertFile, listFiles, softDeleteFile } from '../src/index.js';

let db: Db;
const A = newId();
const B = newId();
const page = { limit: 100, offset: 0 };

const row = (workspaceId: string, filename: string, extra: Partial<Parameters<typeof insertFile>[1]> = {}) => ({
  id: newId(),
  workspaceId,
  filename,
  contentType: 'text/plain',
  size: 5,
  sha256: 'ab'.repeat(32),
  blobKey: 'cd'.repeat(16),
  metadata: {},
  createdBy: null,
  ...extra,
});

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'storage' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
});
afterAll(() => db.destroy());

describe('file records', () => {
  it('insert returns the view: size a number (bigint column, also past 2^32), metadata, ISO created_at', async () => {
    const big = 5 * 1024 ** 3 + 7;
    const view = await insertFile(db, row(A, 'report.pdf', { contentType: 'application/pdf', size: big, metadata: { tag: 'q1', n: [1, 2] } }));
    expect(view).toEqual({
      id: expect.any(String),
      workspace_id: A,
      filename: 'report.pdf',
      content_type: 'application/pdf',
      size: big,
      sha256: 'ab'.repeat(32),
      metadata: { tag: 'q1', n: [1, 2] },
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(view).not.toHaveProperty('blob_key');
    const got = await getFile(db, A, asUuid(view.id));
    expect(got).toEqual({ ...view, blob_key: 'cd'.repeat(16) });
    expect(typeof got.size).toBe('number');
  });

  it('lists live files newest first, paged', async () => {
    const ws = newId();
    await db.insertInto('platform.workspaces').values({ id: ws, name: 'list' }).execute();
    const ids: string[] = [];
    for (const name of ['one', 'two', 'three']) ids.push((await insertFile(db, row(ws, name))).id);
    expect((await listFiles(db, ws, page)).map((f) => f.filename)).toEqual(['three', 'two', 'one']);
    expect((await listFiles(db, ws, { limit: 1, offset: 1 })).map((f) => f.filename)).toEqual(['two']);
    expect(await listFiles(db, ws, page)).not.toContainEqual(expect.objectContaining({ blob_key: expect.anything() }));
    await softDeleteFile(db, ws, asUuid(ids[1]!));
    expect((await listFiles(db, ws, page)).map((f) => f.filename)).toEqual(['three', 'one']);
  });

  it('soft delete: returns the file, then it is NOT_FOUND everywhere (also for a second delete)', async () => {
    const { id } = await insertFile(db, row(A, 'gone.txt'));
    const deleted = await softDeleteFile(db, A, asUuid(id));
    expect(deleted).toMatchObject({ id, filename: 'gone.txt' });
    await expect(getFile(db, A, asUuid(id))).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'File not found' });
    await expect(softDeleteFile(db, A, asUuid(id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await listFiles(db, A, page)).map((f) => f.id)).not.toContain(id);
    // the row (and so the blob key) is still there for repair or a later purge
    expect(await db.selectFrom('platform.files').select('blob_key').where('id', '=', id).executeTakeFirst()).toBeDefined();
  });

  it("another workspace's file is NOT_FOUND, and not listed", async () => {
    const { id } = await insertFile(db, row(A, 'private.txt'));
    await expect(getFile(db, B, asUuid(id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeleteFile(db, B, asUuid(id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await listFiles(db, B, page)).map((f) => f.id)).not.toContain(id);
    expect((await getFile(db, A, asUuid(id))).filename).toBe('private.txt');
  });

  it('a non-UUID never reaches them (never a database error); an unknown id is NOT_FOUND', async () => {
    // The id is a Uuid: the route layer answers 404 for a path id that is not one.
    expectTypeOf(getFile).parameter(2).toEqualTypeOf<Uuid>();
    expectTypeOf(softDeleteFile).parameter(2).toEqualTypeOf<Uuid>();
    await expect(getFile(db, A, newId())).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeleteFile(db, A, newId())).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
