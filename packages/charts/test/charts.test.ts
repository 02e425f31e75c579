import '@wds/testkit';
import { createDb, migrateToLatest, newId, asUuid, type Uuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, expectTypeOf } from 'vitest';
import { createPinnedChart, getPinnedChart, listPinnedCharts, softDeletePinnedChart, updatePinnedChart } from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const A = newId();
const B = newId();
const page = { limit: 100, offset: 0 };
const base = { title: 'Sales', sql_query: 'SELECT month, total FROM sales', chart_type: 'bar', createdBy: null };

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'charts' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
});
afterAll(() => db.destroy());

describe('pinned charts', () => {
  it('create with defaults and with every field', async () => {
    const c = await createPinnedChart(db, A, base);
    expect(c).toMatchObject({
      workspace_id: A,
      title: 'Sales',
      chart_type: 'bar',
      x_axis_column: null,
      y_axis_columns: null,
      display_order: 0,
      description: null,
      is_visible: true,
    });
    const full = await createPinnedChart(db, A, {
      ...base,
      x_axis_column: 'month',
      y_axis_columns: ['total', 'count'],
      display_order: -3,
      description: 'Monthly',
      is_visible: false,
    });
    expect(await getPinnedChart(db, A, asUuid(full.id))).toEqual(full);
    expect(full.y_axis_columns).toEqual(['total', 'count']);
  });

  it('the list has visible charts by display_order then creation; hidden ones on request', async () => {
    const W = newId();
    await db.insertInto('platform.workspaces').values({ id: W, name: 'w' }).execute();
    const c1 = await createPinnedChart(db, W, { ...base, title: 'c1', display_order: 2 });
    const c2 = await createPinnedChart(db, W, { ...base, title: 'c2', display_order: 1 });
    const c3 = await createPinnedChart(db, W, { ...base, title: 'c3', display_order: 1 });
    const hidden = await createPinnedChart(db, W, { ...base, title: 'h', is_visible: false });
    expect((await listPinnedCharts(db, W, page)).map((c) => c.id)).toEqual([c2.id, c3.id, c1.id]);
    expect((await listPinnedCharts(db, W, page, { includeHidden: true })).map((c) => c.id)).toEqual([hidden.id, c2.id, c3.id, c1.id]);
    expect((await listPinnedCharts(db, W, { limit: 1, offset: 1 })).map((c) => c.id)).toEqual([c3.id]);
    await updatePinnedChart(db, W, asUuid(hidden.id), { is_visible: true, display_order: 5 });
    expect((await listPinnedCharts(db, W, page)).map((c) => c.title)).toEqual(['c2', 'c3', 'c1', 'h']);
  });

  it('update: only fields given; null clears optional ones', async () => {
    const c = await createPinnedChart(db, A, { ...base, x_axis_column: 'm', y_axis_columns: ['t'], description: 'd' });
    const u = await updatePinnedChart(db, A, asUuid(c.id), { title: 'New', y_axis_columns: null, description: null });
    expect(u).toMatchObject({ title: 'New', sql_query: base.sql_query, x_axis_column: 'm', y_axis_columns: null, description: null });
    expect(new Date(u.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(c.updated_at).getTime());
  });

  it('another workspace sees nothing; soft delete hides', async () => {
    const c = await createPinnedChart(db, A, base);
    await expect(getPinnedChart(db, B, asUuid(c.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(updatePinnedChart(db, B, asUuid(c.id), { title: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeletePinnedChart(db, B, asUuid(c.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await listPinnedCharts(db, B, page)).toEqual([]);
    await softDeletePinnedChart(db, A, asUuid(c.id));
    await expect(getPinnedChart(db, A, asUuid(c.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(updatePinnedChart(db, A, asUuid(c.id), { title: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(softDeletePinnedChart(db, A, asUuid(c.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await listPinnedCharts(db, A, page, { includeHidden: true })).map((x) => x.id)).not.toContain(c.id);
    const row = await db.selectFrom('platform.pinned_charts').select('deleted_at').where('id', '=', c.id).executeTakeFirstOrThrow();
    expect(row.deleted_at).not.toBeNull();
    // A text that is not a UUID never reaches it: the id is a Uuid (the route layer answers 404 for one in a path).
    expectTypeOf(getPinnedChart).parameter(2).toEqualTypeOf<Uuid>();
  });

  it('field rules', async () => {
    for (const bad of [
      { title: '' },
      { title: 't'.repeat(256) },
      { sql_query: ' ' },
      { sql_query: 'S'.repeat(20_001) },
      { chart_type: '' },
      { y_axis_columns: [''] },
      { y_axis_columns: Array.from({ length: 51 }, (_, i) => `c${i}`) },
      { display_order: 1.5 },
      { display_order: 2 ** 31 },
    ]) {
      await expect(createPinnedChart(db, A, { ...base, ...bad }), JSON.stringify(bad).slice(0, 80)).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    await createPinnedChart(db, A, { ...base, sql_query: `SELECT ${'1'.repeat(20_000 - 7)}` });
  });
});
