import '@wds/testkit';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type SqlCaller, WorkspaceSql } from '../src/index.js';

/**
 * testSql(sql, { golden, rows }): the exact SQL the caller's statement becomes, then the rows it returns when run
 * on PostgreSQL — in workspace A, next to workspace B whose tables have the same names and hold a canary that must
 * never come back. Golden SQL alone can be wrong; execution alone can hide a missing predicate.
 *
 * Both workspaces: `docs (owner_id uuid, slug text UNIQUE, title text, n int)` with soft delete. In A the caller
 * owns `mine`; a colleague owns `theirs` (title HIDDEN_A). Policies for the caller in A: select only own rows,
 * update and delete any row (write rights wider than read rights), insert any row.
 */

let pool: pg.Pool;
let url: string;
let sql: WorkspaceSql;
let destroy: () => Promise<void>;
const A = newId();
const B = newId();
const me = newId();
const colleague = newId();
const AP = `user_data.ws_${A.replace(/-/g, '_')}_`;
const limits = { statementTimeoutMs: 2000, maxRows: 100 };
const caller: SqlCaller = { workspaceId: A, ddlGroupId: null, isAdmin: false, subject: { kind: 'user', userId: me } };
const admin = (workspaceId: string): SqlCaller => ({ workspaceId, ddlGroupId: null, isAdmin: true, subject: { kind: 'user', userId: me } });

async function policy(ws: string, group: string, operation: string, condition: unknown) {
  await pool.query(
    `INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation, condition)
     VALUES ($1, $2, $3, $4, 'allow', 'docs', $5, $6)`,
    [newId(), ws, group, `${operation} policy`, operation, condition === null ? null : JSON.stringify(condition)],
  );
}

beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'sqlcore' });
  const made = createDb(url, { max: 4 });
  await migrateToLatest(made.db);
  pool = made.pool;
  destroy = () => made.db.destroy();
  sql = new WorkspaceSql(pool, { databaseUrl: url });
  await pool.query('INSERT INTO platform.users (id, email, name) VALUES ($1, $2, $3), ($4, $5, $6)', [me, `${me}@x.io`, 'me', colleague, `${colleague}@x.io`, 'c']);
  await pool.query('INSERT INTO platform.workspaces (id, name) VALUES ($1, $2), ($3, $4)', [A, 'a', B, 'b']);
  for (const [ws, hidden] of [[A, 'HIDDEN_A'], [B, 'CANARY_B']] as const) {
    await sql.execute(admin(ws), 'CREATE TABLE docs (owner_id uuid, slug text UNIQUE, title text, n int)', limits);
    await pool.query(`INSERT INTO user_data.ws_${ws.replace(/-/g, '_')}_docs (owner_id, slug, title, n) VALUES ($1, 'mine', 'Mine', 1), ($2, 'theirs', $3, 2)`, [
      me,
      colleague,
      hidden,
    ]);
  }
  const group = newId();
  await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, A, 'g', [me]]);
  await policy(A, group, 'select', { owner_id: '$user_id' });
  await policy(A, group, 'update', null);
  await policy(A, group, 'delete', null);
  await policy(A, group, 'insert', null);
});
afterAll(async () => {
  await sql?.close();
  await destroy?.();
});

/** The golden form uses {A} for A's physical prefix and {me} for the caller's id. */
async function testSql(statement: string, expected: { golden: string; rows?: unknown[]; affected?: number }) {
  const preview = await sql.preview(caller, statement, true);
  expect(preview.policy_sql).toBe(expected.golden.replaceAll('{A}', AP).replaceAll('{me}', me));
  const result = await sql.execute(caller, statement, limits);
  if (expected.rows) expect(result.rows).toEqual(expected.rows);
  if (expected.affected !== undefined) expect(result.affected_rows).toBe(expected.affected);
  expect(JSON.stringify(result)).not.toMatch(/CANARY_B|HIDDEN_A/);
  return result;
}

const OWN = `docs.owner_id = '{me}'`;
const LIVE = 'docs.deleted_at IS NULL';

describe('testSql: golden SQL, then the rows on PostgreSQL', () => {
  it('a read sees only the caller\u2019s rows of its own workspace', async () => {
    await testSql('SELECT slug, title FROM docs ORDER BY slug', {
      golden: `SELECT slug, title FROM ( SELECT * FROM {A}docs AS docs WHERE ${OWN} AND ${LIVE} OFFSET 0 ) AS docs ORDER BY slug`,
      rows: [{ slug: 'mine', title: 'Mine' }],
    });
  });

  it('an UPDATE touches only rows the caller may also select: hidden rows are neither changed nor counted', async () => {
    await testSql('UPDATE docs SET n = n + 10', {
      golden: `UPDATE {A}docs AS docs SET n = n + 10, updated_at = now() WHERE ${OWN} AND ${LIVE}`,
      affected: 1,
    });
    const { rows } = await pool.query(`SELECT slug, n FROM ${AP}docs ORDER BY slug`);
    expect(rows).toEqual([{ slug: 'mine', n: 11 }, { slug: 'theirs', n: 2 }]);
  });

  it('an error in a WHERE over a hidden row cannot happen: the user WHERE runs behind the filter', async () => {
    const statement = 'UPDATE docs SET n = n WHERE title::int = 1';
    const preview = await sql.preview(caller, statement, true);
    expect(preview.policy_sql).toBe(
      `UPDATE {A}docs AS docs SET n = n, updated_at = now() WHERE (${OWN} AND ${LIVE}) AND CASE WHEN (${OWN} AND ${LIVE}) THEN title::int = 1 ELSE false END`
        .replaceAll('{A}', AP)
        .replaceAll('{me}', me),
    );
    // 'Mine' is not an integer: the error names the caller's own value, never the hidden one.
    const err = await sql.execute(caller, statement, limits).then(() => undefined, (e) => e);
    expect(err).toMatchObject({ code: 'EXECUTION_ERROR', message: expect.stringContaining('Mine') });
    expect(JSON.stringify({ m: err.message, d: err.details })).not.toContain('HIDDEN_A');
  });

  it('RETURNING: the row check comes first, so user expressions only see rows that passed it', async () => {
    await testSql("UPDATE docs SET n = 5 WHERE slug = 'mine' RETURNING slug", {
      golden: `UPDATE {A}docs AS docs SET n = 5, updated_at = now() WHERE docs.slug = 'mine' AND (${OWN} AND ${LIVE}) AND CASE WHEN (${OWN} AND ${LIVE}) THEN slug = 'mine' ELSE false END RETURNING user_data.wds_row_check(${OWN}, 'docs:select') AS __wds_check, slug`,
      rows: [{ slug: 'mine' }],
    });
  });

  it('DELETE of a hidden row changes nothing and counts nothing', async () => {
    await testSql("DELETE FROM docs WHERE slug = 'theirs'", {
      golden: `UPDATE {A}docs AS docs SET deleted_at = now(), updated_at = now() WHERE docs.slug = 'theirs' AND (${OWN} AND ${LIVE}) AND CASE WHEN (${OWN} AND ${LIVE}) THEN slug = 'theirs' ELSE false END`,
      affected: 0,
    });
    const { rows } = await pool.query(`SELECT deleted_at FROM ${AP}docs WHERE slug = 'theirs'`);
    expect(rows).toEqual([{ deleted_at: null }]);
  });

  it('an upsert never updates a hidden conflicting row', async () => {
    const r = await sql.execute(caller, `INSERT INTO docs (owner_id, slug, title) VALUES ('${me}', 'theirs', 'x') ON CONFLICT (slug) DO UPDATE SET n = 99`, limits);
    expect(r.affected_rows).toBe(0);
    const { rows } = await pool.query(`SELECT n, title FROM ${AP}docs WHERE slug = 'theirs'`);
    expect(rows).toEqual([{ n: 2, title: 'HIDDEN_A' }]);
  });

  it('database errors never pass on DETAIL text, which can carry row data', async () => {
    const err = await sql
      .execute(caller, "INSERT INTO docs (slug, title) VALUES ('theirs', 'dup')", limits)
      .then(() => undefined, (e) => e);
    expect(err?.code).toBe('EXECUTION_ERROR');
    expect(JSON.stringify({ m: err.message, d: err.details })).not.toMatch(/theirs|Key \(|Failing row/);
    expect(err.details).toContain('SQLSTATE 23505');
  });
});
