import '@wds/testkit';
import { createDb, migrateToLatest, newId, asUuid, type Uuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, expectTypeOf } from 'vitest';
import {
  createDocument,
  getDocument,
  listDocuments,
  listDocumentVersions,
  softDeleteDocument,
  updateDocument,
} from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const A = newId();
const B = newId();
const U = newId();
const page = { limit: 100, offset: 0 };
const doc = (over: Partial<Parameters<typeof createDocument>[2]> = {}) =>
  createDocument(db, A, { title: 'Guide', doc_type: 'guide', status: 'draft', content: '# One', createdBy: U, ...over });

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'documents' }), { max: 4 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
  await db.insertInto('platform.users').values({ id: U, email: `u.${U}@example.test`, name: 'u' }).execute();
});
afterAll(() => db.destroy());

describe('documents', () => {
  it('create writes version 1 with the content; get returns it; list leaves content out', async () => {
    const d = await doc({ metadata: { team: 'ops', n: 1 } });
    expect(d).toMatchObject({ workspace_id: A, title: 'Guide', doc_type: 'guide', status: 'draft', content: '# One', version: 1, created_by: U });
    expect(d.metadata).toEqual({ team: 'ops', n: 1 });
    expect(await getDocument(db, A, asUuid(d.id))).toEqual(d);
    const versions = await listDocumentVersions(db, A, asUuid(d.id), page);
    expect(versions).toHaveLength(1);
    expect(versions[0]).toMatchObject({ document_id: d.id, version: 1, title: 'Guide', content: '# One', created_by: U });
    const listed = (await listDocuments(db, A, page)).find((x) => x.id === d.id);
    expect(listed).toBeDefined();
    expect(listed).not.toHaveProperty('content');
    expect(listed).toMatchObject({ title: 'Guide', version: 1, metadata: { team: 'ops', n: 1 } });
    expect((await doc()).metadata).toEqual({});
  });

  it('a content change adds a snapshot of the new content; other changes and equal content do not', async () => {
    const d = await doc();
    const t = await updateDocument(db, A, asUuid(d.id), { title: 'Renamed', status: 'review', metadata: { a: 1 } }, U);
    expect(t.versionAdded).toBe(false);
    expect(t.document).toMatchObject({ title: 'Renamed', status: 'review', metadata: { a: 1 }, version: 1, content: '# One' });
    expect(await listDocumentVersions(db, A, asUuid(d.id), page)).toHaveLength(1);

    const same = await updateDocument(db, A, asUuid(d.id), { content: '# One' }, U);
    expect(same.versionAdded).toBe(false);
    expect(same.document.version).toBe(1);

    const c = await updateDocument(db, A, asUuid(d.id), { content: '# Two', title: 'Second' }, null);
    expect(c.versionAdded).toBe(true);
    expect(c.document).toMatchObject({ content: '# Two', title: 'Second', version: 2 });
    await updateDocument(db, A, asUuid(d.id), { content: '# Three' }, U);
    const versions = await listDocumentVersions(db, A, asUuid(d.id), page);
    expect(versions.map((v) => [v.version, v.title, v.content, v.created_by])).toEqual([
      [3, 'Second', '# Three', U],
      [2, 'Second', '# Two', null],
      [1, 'Guide', '# One', U],
    ]);
    expect((await getDocument(db, A, asUuid(d.id))).version).toBe(3);
    expect((await listDocumentVersions(db, A, asUuid(d.id), { limit: 1, offset: 1 })).map((v) => v.version)).toEqual([2]);

    expect((await updateDocument(db, A, asUuid(d.id), { metadata: null }, U)).document.metadata).toEqual({});
    const untouched = await updateDocument(db, A, asUuid(d.id), {}, U);
    expect(untouched).toMatchObject({ versionAdded: false, document: { version: 3, content: '# Three' } });
  });

  it('concurrent content changes get consecutive versions', async () => {
    const d = await doc();
    const results = await Promise.all([1, 2, 3].map((n) => updateDocument(db, A, asUuid(d.id), { content: `# v${n}` }, U)));
    expect(results.map((r) => r.document.version).sort()).toEqual([2, 3, 4]);
    const versions = await listDocumentVersions(db, A, asUuid(d.id), page);
    expect(versions.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    expect(versions[0]?.content).toBe((await getDocument(db, A, asUuid(d.id))).content);
  });

  it('filters by doc_type and status, exactly, with paging', async () => {
    const ws = newId();
    await db.insertInto('platform.workspaces').values({ id: ws, name: 'f' }).execute();
    const make = (doc_type: string, status: string) =>
      createDocument(db, ws, { title: `${doc_type}/${status}`, doc_type, status, content: 'x', createdBy: null });
    const a = await make('spec', 'draft');
    const b = await make('spec', 'final');
    const c = await make('note', 'draft');
    const ids = async (f: { doc_type?: string; status?: string; limit?: number; offset?: number }) =>
      (await listDocuments(db, ws, { limit: 100, offset: 0, ...f })).map((x) => x.id);
    expect(await ids({})).toEqual([a.id, b.id, c.id]);
    expect(await ids({ doc_type: 'spec' })).toEqual([a.id, b.id]);
    expect(await ids({ status: 'draft' })).toEqual([a.id, c.id]);
    expect(await ids({ doc_type: 'spec', status: 'final' })).toEqual([b.id]);
    expect(await ids({ doc_type: 'Spec' })).toEqual([]);
    expect(await ids({ limit: 1, offset: 1 })).toEqual([b.id]);
  });

  it('soft delete hides the document everywhere', async () => {
    const d = await doc();
    expect((await softDeleteDocument(db, A, asUuid(d.id))).id).toBe(d.id);
    await expect(getDocument(db, A, asUuid(d.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(listDocumentVersions(db, A, asUuid(d.id), page)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(updateDocument(db, A, asUuid(d.id), { content: 'again' }, U)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeleteDocument(db, A, asUuid(d.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await listDocuments(db, A, page)).map((x) => x.id)).not.toContain(d.id);
  });

  it('another workspace and malformed ids are NOT_FOUND', async () => {
    const d = await doc({ title: 'private' });
    await expect(getDocument(db, B, asUuid(d.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(updateDocument(db, B, asUuid(d.id), { content: 'stolen' }, null)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(listDocumentVersions(db, B, asUuid(d.id), page)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeleteDocument(db, B, asUuid(d.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await listDocuments(db, B, page)).toEqual([]);
    expect((await getDocument(db, A, asUuid(d.id))).content).toBe('# One');
    // A text that is not a UUID never reaches them: the id is a Uuid (the route layer answers 404 for one in a path).
    expectTypeOf(getDocument).parameter(2).toEqualTypeOf<Uuid>();
    expectTypeOf(updateDocument).parameter(2).toEqualTypeOf<Uuid>();
    expectTypeOf(softDeleteDocument).parameter(2).toEqualTypeOf<Uuid>();
  });

  it("a failed change in the caller's transaction leaves neither the change nor its snapshot", async () => {
    const d = await doc();
    await expect(
      db.transaction().execute(async (tx) => {
        await updateDocument(tx, A, asUuid(d.id), { content: '# rolled back' }, U);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await getDocument(db, A, asUuid(d.id))).content).toBe('# One');
    expect((await listDocumentVersions(db, A, asUuid(d.id), page)).map((v) => v.version)).toEqual([1]);
  });
});
