import '@wds/testkit';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { analyze, loadParser, rewrite } from '@wds/sql-rewriter';
import { createDatabase } from '@wds/testkit';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AnalysisWorker, OFFLOAD_BYTES, type SqlCaller, WorkspaceSql } from '../src/index.js';

/** Long statements are analysed and rewritten in a worker thread, so they never stall other tenants' requests. */

let pool: pg.Pool;
let sql: WorkspaceSql;
let destroy: () => Promise<void>;
const A = newId();
const B = newId();
const owner = newId();
const admin = (workspaceId: string): SqlCaller => ({ workspaceId, ddlGroupId: null, isAdmin: true, subject: { kind: 'user', userId: owner } });
const limits = { statementTimeoutMs: 5000, maxRows: 100 };
/** `SELECT … WHERE n IN (0, 1, …)` of about `bytes` bytes. */
const longIn = (bytes: number, head = 'SELECT 1 AS one WHERE 1') => {
  const count = Math.ceil(bytes / 7);
  return `${head} IN (${Array.from({ length: count }, (_, i) => 100000 + i).join(',')})`;
};

beforeAll(async () => {
  const url = await createDatabase(inject('pgServerUrl'), { prefix: 'offload' });
  const made = createDb(url, { max: 4 });
  await migrateToLatest(made.db);
  pool = made.pool;
  destroy = () => made.db.destroy();
  await pool.query('INSERT INTO platform.workspaces (id, name) VALUES ($1, $2), ($3, $4)', [A, 'a', B, 'b']);
  sql = new WorkspaceSql(pool, { databaseUrl: url });
  await loadParser();
});
afterAll(async () => {
  await sql?.close();
  await destroy?.();
});

describe('the analysis worker', () => {
  it('rewrites a long statement exactly as this thread would', async () => {
    const statement = longIn(OFFLOAD_BYTES * 2);
    const preview = await sql.preview(admin(A), statement, false);
    expect(preview.transformed_sql).toBe(rewrite(analyze(statement), { workspaceId: A, catalog: new Map() }));
    expect((await sql.execute(admin(A), longIn(OFFLOAD_BYTES * 2, 'SELECT 1 AS one WHERE 100000'), limits)).rows).toEqual([{ one: 1 }]);
  });

  it('answers its refusals with the same codes', async () => {
    await expect(sql.execute(admin(A), longIn(OFFLOAD_BYTES * 2, "SELECT pg_read_file('/etc/hostname') WHERE 1"), limits)).rejects.toMatchObject({
      code: 'UNSUPPORTED',
    });
    await sql.execute(admin(A), 'CREATE TABLE docs (n int)', limits);
    // Admins have no row policies by default: a long statement is denied like a short one.
    await expect(sql.execute(admin(A), longIn(OFFLOAD_BYTES * 2, 'SELECT n FROM docs WHERE n'), limits)).rejects.toMatchObject({ code: 'POLICY_DENIED' });
    await expect(sql.execute(admin(A), `${longIn(OFFLOAD_BYTES * 2)} AND`, limits)).rejects.toMatchObject({ code: 'PARSE_ERROR' });
  });

  it('keeps the event loop free: a short statement of another workspace finishes while a long one is analysed', async () => {
    const order: string[] = [];
    const long = sql.preview(admin(A), longIn(900 * 1024), false).then(() => order.push('long'));
    // Give the long statement a head start into the worker, then run a short one here.
    await new Promise((r) => setImmediate(r));
    await sql.execute(admin(B), 'SELECT 1 AS one', limits).then(() => order.push('short'));
    await long;
    expect(order).toEqual(['short', 'long']);
  });

  it('a statement that exhausts the worker\u2019s memory fails alone; the next one gets a new worker', async () => {
    const worker = new AnalysisWorker({ maxHeapMb: 24 });
    try {
      await expect(worker.analyse(longIn(900 * 1024))).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      const small = await worker.analyse(longIn(OFFLOAD_BYTES * 2));
      expect(small.kind).toBe('select');
      small.release();
    } finally {
      await worker.close();
    }
  });
});

describe('analysis handles', () => {
  it('a statement analysed by a worker that has since stopped is never rewritten by its successor', async () => {
    const worker = new AnalysisWorker();
    try {
      const first = await worker.analyse(longIn(OFFLOAD_BYTES * 2));
      await worker.close();
      // The next worker numbers its analyses from the start again: the old handle must not reach them.
      const second = await worker.analyse(longIn(OFFLOAD_BYTES * 2, "SELECT 'other tenant' WHERE 1"));
      await expect(first.rewrite({ workspaceId: A, catalog: new Map(), userId: null })).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(await second.rewrite({ workspaceId: B, catalog: new Map(), userId: null })).toContain('other tenant');
      second.release();
    } finally {
      await worker.close();
    }
  });

  it('a (table, operation) without a decision is an error, never "no filter"', async () => {
    const worker = new AnalysisWorker();
    try {
      const statement = await worker.analyse(longIn(OFFLOAD_BYTES * 2, 'SELECT 1 FROM docs WHERE 1'));
      await expect(statement.rewrite({ workspaceId: A, catalog: new Map(), decisions: {}, userId: null })).rejects.toMatchObject({
        code: 'INTERNAL_ERROR',
      });
    } finally {
      await worker.close();
    }
  });
});

describe('sharing the analysis worker', () => {
  it('one workspace holds at most two long statements in it; another workspace still gets in', async () => {
    const worker = new AnalysisWorker({ maxPerWorkspace: 2, maxTotal: 8 });
    try {
      const held = [await worker.analyse(longIn(OFFLOAD_BYTES * 2), A), await worker.analyse(longIn(OFFLOAD_BYTES * 2), A)];
      await expect(worker.analyse(longIn(OFFLOAD_BYTES * 2), A)).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS', status: 429 });
      const other = await worker.analyse(longIn(OFFLOAD_BYTES * 2), B);
      other.release();
      held[0]?.release();
      (await worker.analyse(longIn(OFFLOAD_BYTES * 2), A)).release();
      held[1]?.release();
    } finally {
      await worker.close();
    }
  });
});
