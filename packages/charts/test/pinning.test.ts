import '@wds/testkit';
import { createDb, migrateToLatest, newId, asUuid } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type ChartSqlParser,
  assertCanChangeChart,
  changePinnedChart,
  checkChartSql,
  getPinnedChart,
  listPinnedCharts,
  pinChart,
  unpinChart,
} from '../src/index.js';

/** A stand-in for the rewriter: `SELECT …` reads, `WITH w …` writes, anything else is a PARSE_ERROR. */
function fakeParser(): ChartSqlParser & { loads: number } {
  const p = {
    loads: 0,
    loadParser: async () => {
      p.loads++;
    },
    analyze: (sql: string) => {
      if (sql.startsWith('SELECT')) return { kind: 'select', writes: false };
      if (sql.startsWith('WITH w')) return { kind: 'select', writes: true };
      if (sql.startsWith('DELETE')) return { kind: 'delete', writes: true };
      if (sql.startsWith('BOOM')) throw new TypeError('parser bug');
      throw new ServiceError('PARSE_ERROR', 'syntax error at or near "x"', 'position 1');
    },
  };
  return p;
}

async function failure(p: Promise<unknown> | (() => void)): Promise<ServiceError> {
  const err = await (typeof p === 'function' ? Promise.resolve().then(p) : p).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

describe('checkChartSql', () => {
  it('loads the parser, then accepts one SELECT that writes nothing', async () => {
    const parser = fakeParser();
    await checkChartSql(parser, 'SELECT 1');
    expect(parser.loads).toBe(1);
  });

  it.each([
    ['DELETE FROM t', 'sql_query: must be one SELECT statement that writes nothing'],
    ['WITH w AS (DELETE FROM t RETURNING *) SELECT 1', 'sql_query: must be one SELECT statement that writes nothing'],
    ['x', 'sql_query: syntax error at or near "x" (position 1)'],
  ])('refuses %s as 400 VALIDATION_ERROR', async (sql, details) => {
    expect((await failure(checkChartSql(fakeParser(), sql))).toBody()).toEqual({ error: 'Invalid request', code: 'VALIDATION_ERROR', details });
  });

  it('passes on what is not a refusal of the SQL (a failed parser load, a bug)', async () => {
    const down = new ServiceError('SERVICE_UNAVAILABLE', 'parser unavailable');
    await expect(checkChartSql({ ...fakeParser(), loadParser: () => Promise.reject(down) }, 'SELECT 1')).rejects.toBe(down);
    await expect(checkChartSql(fakeParser(), 'BOOM')).rejects.toThrow(TypeError);
  });
});

describe('assertCanChangeChart', () => {
  const chart = { created_by: 'u1' } as Parameters<typeof assertCanChangeChart>[1];
  it('the creator and an admin may; another member may not (403)', async () => {
    assertCanChangeChart({ userId: 'u1', admin: false }, chart);
    assertCanChangeChart({ userId: 'u2', admin: true }, chart);
    assertCanChangeChart({ userId: 'u2', admin: true }, { ...chart, created_by: null });
    const err = await failure(() => assertCanChangeChart({ userId: 'u2', admin: false }, chart));
    expect(err.toBody()).toEqual({ error: "Only the chart's creator or a workspace admin can change it", code: 'FORBIDDEN' });
  });
});

describe('pinning as a member', () => {
  let db: ReturnType<typeof createDb>['db'];
  const W = newId();
  const owner = { userId: newId(), admin: false };
  const other = { userId: newId(), admin: false };
  const admin = { userId: newId(), admin: true };
  const page = { limit: 100, offset: 0 };
  const base = { title: 'Sales', sql_query: 'SELECT month, total FROM sales', chart_type: 'bar' };

  beforeAll(async () => {
    db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'charts_pin' }), { max: 2 }).db;
    await migrateToLatest(db);
    await db.insertInto('platform.workspaces').values({ id: W, name: 'w' }).execute();
    await db
      .insertInto('platform.users')
      .values([owner, other, admin].map((u, i) => ({ id: u.userId, email: `u${i}@example.com`, name: `u${i}` })))
      .execute();
  });
  afterAll(() => db.destroy());

  it('pinChart checks the query before anything is stored', async () => {
    const deps = { db, sqlParser: fakeParser() };
    await failure(pinChart(deps, W, { ...base, sql_query: 'DELETE FROM sales', createdBy: owner.userId }));
    expect(await listPinnedCharts(db, W, page, { includeHidden: true })).toEqual([]);
    const c = await pinChart(deps, W, { ...base, createdBy: owner.userId });
    expect(c).toMatchObject({ title: 'Sales', created_by: owner.userId });
  });

  it('changePinnedChart: 403 for another member, a new query is checked, the creator and an admin change it', async () => {
    const deps = { db, sqlParser: fakeParser() };
    const c = await pinChart(deps, W, { ...base, createdBy: owner.userId });
    expect((await failure(changePinnedChart(deps, W, asUuid(c.id), { title: 'Mine' }, other))).code).toBe('FORBIDDEN');
    expect((await failure(changePinnedChart(deps, W, asUuid(c.id), { sql_query: 'x' }, owner))).code).toBe('VALIDATION_ERROR');
    expect((await getPinnedChart(db, W, asUuid(c.id))).title).toBe('Sales');
    expect(await changePinnedChart(deps, W, asUuid(c.id), { title: 'Q1' }, owner)).toMatchObject({ title: 'Q1' });
    expect(await changePinnedChart(deps, W, asUuid(c.id), { sql_query: 'SELECT 2' }, admin)).toMatchObject({ sql_query: 'SELECT 2' });
    expect((await failure(changePinnedChart(deps, W, newId(), { title: 'x' }, admin))).code).toBe('NOT_FOUND');
  });

  it('unpinChart: 403 for another member, the creator unpins', async () => {
    const c = await pinChart({ db, sqlParser: fakeParser() }, W, { ...base, createdBy: owner.userId });
    expect((await failure(unpinChart(db, W, asUuid(c.id), other))).code).toBe('FORBIDDEN');
    expect((await unpinChart(db, W, asUuid(c.id), owner)).id).toBe(c.id);
    expect((await failure(getPinnedChart(db, W, asUuid(c.id)))).code).toBe('NOT_FOUND');
  });
});
