import { WorkspaceSql } from '@wds/workspace-sql';
import { afterAll } from 'vitest';
import { Harness, describe, eventually, expect, test } from './support.js';

/**
 * The rewrite cache (packages/workspace-sql/src/rewrite-cache.ts): a statement whose shape was rewritten before is
 * its template filled with the new constants. It must never serve a rewrite made under other policies, groups,
 * columns or for another caller, in this process or after a change made by another one, and statements that
 * differ only in constants must never share results.
 */
let other: Harness | undefined;
let plain: WorkspaceSql | undefined;
afterAll(async () => {
  await other?.close();
  await plain?.close();
});


/** The owner may insert (only): the rows the tests read are put there by the owner. */
async function ownerInserts(h: Harness, owner: { id: string; token: string }, ws: string): Promise<void> {
  const g = await h.group(owner.token, ws, { name: 'writers', user_ids: [owner.id] });
  await h.policy(owner.token, ws, { policy_group_id: g, table_name: 'notes', operation: 'insert' });
}

const hits = (h: Harness) => h.services.sql.rewriteCacheStats.hits;
const rowsOf = async (h: Harness, token: string, ws: string, sql: string) => {
  const r = await h.sql(token, ws, sql);
  if (r.status !== 200) return `${r.status} ${r.body.code}`;
  return (r.body.rows as { v: string }[]).map((x) => x.v).sort();
};

describe('rewrite cache', () => {
  test('statements differing only in constants never share results', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (owner text, v text, n int, d numeric)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
    await h.sqlOk(
      owner.token,
      ws.id,
      `INSERT INTO notes (owner, v, n, d) VALUES ('a', 'a1', 1, 1.5), ('b', 'b1', -2, -2.5), ('it''s', 'q1', 3, 0), ('$1', 'd1', 4, 4.25), ('a'' OR ''1''=''1', 'inj', 5, 5)`,
    );
    const before = hits(h);
    const byOwner = async (o: string) => rowsOf(h, owner.token, ws.id, `SELECT v FROM notes WHERE owner = '${o.replaceAll("'", "''")}' AND n > -100`);
    expect(await byOwner('a')).toEqual(['a1']);
    expect(await byOwner('b')).toEqual(['b1']);
    expect(await byOwner("it's")).toEqual(['q1']);
    expect(await byOwner('$1')).toEqual(['d1']);
    expect(await byOwner("a' OR '1'='1")).toEqual(['inj']);
    expect(await byOwner('nobody')).toEqual([]);
    // The same shape answered from the template, each time with its own constant.
    expect(hits(h) - before).toBeGreaterThanOrEqual(5);
    // Numbers of both signs and decimals, in every position.
    expect(await rowsOf(h, owner.token, ws.id, 'SELECT v FROM notes WHERE n = -2')).toEqual(['b1']);
    expect(await rowsOf(h, owner.token, ws.id, 'SELECT v FROM notes WHERE n = -7')).toEqual([]);
    expect(await rowsOf(h, owner.token, ws.id, 'SELECT v FROM notes WHERE d = 4.25 LIMIT 1')).toEqual(['d1']);
    expect(await rowsOf(h, owner.token, ws.id, 'SELECT v FROM notes WHERE d = 1.5 LIMIT 1')).toEqual(['a1']);
    expect(await rowsOf(h, owner.token, ws.id, 'SELECT v FROM notes ORDER BY n LIMIT 1')).toEqual(['b1']);
    expect(await rowsOf(h, owner.token, ws.id, 'SELECT v FROM notes ORDER BY n LIMIT 2')).toEqual(['a1', 'b1']);
    // Writes too: each UPDATE changes only its own row.
    await h.sqlOk(owner.token, ws.id, "UPDATE notes SET v = 'a2' WHERE owner = 'a'");
    await h.sqlOk(owner.token, ws.id, "UPDATE notes SET v = 'b2' WHERE owner = 'b'");
    expect(await rowsOf(h, owner.token, ws.id, 'SELECT v FROM notes WHERE n < 3')).toEqual(['a2', 'b2']);
  });

  test('each caller gets the rewrite of their own policies', async ({ h, owner, ws }) => {
    const bob = await h.user('bob');
    await h.addMember(owner.token, ws.id, bob.email, 'member');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (owner text, v text)');
    await ownerInserts(h, owner, ws.id);
    await h.sqlOk(owner.token, ws.id, `INSERT INTO notes (owner, v) VALUES ('${owner.id}', 'mine'), ('${bob.id}', 'bobs')`);
    const g = await h.group(owner.token, ws.id, { user_ids: [owner.id, bob.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'notes', operation: 'select', condition: { owner: '$user_id' } });
    for (let i = 0; i < 3; i++) {
      expect(await rowsOf(h, owner.token, ws.id, `SELECT v FROM notes WHERE v <> 'x${i}'`)).toEqual(['mine']);
      expect(await rowsOf(h, bob.token, ws.id, `SELECT v FROM notes WHERE v <> 'y${i}'`)).toEqual(['bobs']);
    }
  });

  test('a policy, group or column change is seen by the very next statement', async ({ h, owner, ws }) => {
    const bob = await h.user('bob');
    await h.addMember(owner.token, ws.id, bob.email, 'member');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (owner text, v text)');
    await ownerInserts(h, owner, ws.id);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO notes (owner, v) VALUES ('a', 'a1'), ('b', 'b1')");
    const g = await h.group(owner.token, ws.id, { user_ids: [bob.id] });
    const p = await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'notes', operation: 'select', condition: { owner: 'a' } });
    const read = (i: number) => rowsOf(h, bob.token, ws.id, `SELECT v FROM notes WHERE v <> 'z${i}'`);
    let i = 0;
    // Warm: the template is made, then served.
    expect(await read(i++)).toEqual(['a1']);
    const warm = hits(h);
    expect(await read(i++)).toEqual(['a1']);
    expect(hits(h)).toBe(warm + 1);

    // Policy condition changed.
    expect((await h.call('PATCH', `/api/v1/policies/${p}`, { token: owner.token, workspace: ws.id, body: { condition: { owner: 'b' } } })).status).toBe(200);
    expect(await read(i++)).toEqual(['b1']);
    expect(await read(i++)).toEqual(['b1']);

    // Group membership changed: bob is no longer in the group.
    expect((await h.call('PATCH', `/api/v1/policy-groups/${g}`, { token: owner.token, workspace: ws.id, body: { user_ids: [owner.id] } })).status).toBe(200);
    expect(await read(i++)).toBe('403 POLICY_DENIED');
    expect((await h.call('PATCH', `/api/v1/policy-groups/${g}`, { token: owner.token, workspace: ws.id, body: { user_ids: [bob.id] } })).status).toBe(200);
    expect(await read(i++)).toEqual(['b1']);

    // Columns changed: without deleted_at the soft-delete filter must go, or the statement would fail.
    await h.sqlOk(owner.token, ws.id, 'ALTER TABLE notes DROP COLUMN deleted_at');
    expect(await read(i++)).toEqual(['b1']);
    expect(await read(i++)).toEqual(['b1']);

    // Policy deleted: nothing allows the read any more.
    expect((await h.call('DELETE', `/api/v1/policies/${p}`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    expect(await read(i++)).toBe('403 POLICY_DENIED');
  });

  test("another process's change reaches this process's templates", async ({ h, owner, ws }) => {
    other ??= await Harness.create({}, h.url);
    const bob = await h.user('bob');
    const membership = await h.addMember(owner.token, ws.id, bob.email, 'member');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (owner text, v text)');
    await ownerInserts(h, owner, ws.id);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO notes (owner, v) VALUES ('a', 'a1'), ('b', 'b1')");
    const g = await h.group(owner.token, ws.id, { user_ids: [bob.id] });
    const p = await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'notes', operation: 'select', condition: { owner: 'a' } });
    let i = 0;
    const read = () => rowsOf(other as Harness, bob.token, ws.id, `SELECT v FROM notes WHERE v <> 'z${i++}'`);
    // The other process makes and serves its template.
    await eventually(async () => JSON.stringify(await read()) === '["a1"]');
    const warm = hits(other);
    expect(await read()).toEqual(['a1']);
    expect(hits(other)).toBeGreaterThan(warm);

    await h.call('PATCH', `/api/v1/policies/${p}`, { token: owner.token, workspace: ws.id, body: { condition: { owner: 'b' } } });
    await eventually(async () => JSON.stringify(await read()) === '["b1"]');
    // Once changed, never back to the old rewrite.
    for (let k = 0; k < 5; k++) expect(await read()).toEqual(['b1']);

    await h.call('PATCH', `/api/v1/policy-groups/${g}`, { token: owner.token, workspace: ws.id, body: { user_ids: [owner.id] } });
    await eventually(async () => (await read()) === '403 POLICY_DENIED');

    await h.call('PATCH', `/api/v1/policy-groups/${g}`, { token: owner.token, workspace: ws.id, body: { user_ids: [bob.id] } });
    await eventually(async () => JSON.stringify(await read()) === '["b1"]');
    await h.sqlOk(owner.token, ws.id, 'ALTER TABLE notes DROP COLUMN deleted_at');
    await eventually(async () => JSON.stringify(await read()) === '["b1"]');
    for (let k = 0; k < 3; k++) expect(await read()).toEqual(['b1']);

    // Membership removed in one process: the other refuses the caller before any SQL.
    await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${membership.id}`, { token: owner.token });
    await eventually(async () => (await read()) === '403 FORBIDDEN');
  });

  test('templated and prepared reads answer exactly what the full rewrite does', async ({ h, owner, ws }) => {
    // The reference: the same statements through a WorkspaceSql without a bus, so without any cache.
    plain ??= new WorkspaceSql(h.services.pool, { databaseUrl: h.url, statementTimeoutMs: 2000 });
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (name text, n int, big bigint, d numeric, at timestamptz, doc jsonb, tags text[])');
    await h.allowAll(owner.token, ws.id, [owner.id], ['t']);
    await h.sqlOk(
      owner.token,
      ws.id,
      `INSERT INTO t (name, n, big, d, at, doc, tags) VALUES
        ('alpha', 1, 3000000000, 1.5, '2026-01-01T00:00:00Z', '{"a": 1, "b": "x"}', '{red,blue}'),
        ('beta', -2, -3000000000, 2.25, '2026-02-01T00:00:00Z', '{"a": 2, "b": "y"}', '{green}'),
        ('gamma', 3, 5, -0.5, '2026-03-01T00:00:00Z', '{"a": 3}', '{}'),
        ('it''s', 4, 0, 100, '2026-04-01T00:00:00Z', '{"b": "z"}', '{red}')`,
    );
    const caller = { workspaceId: ws.id, ddlGroupId: null, isAdmin: true, subject: { kind: 'user' as const, userId: owner.id } };
    const reference = async (sql: string) => {
      try {
        return { rows: (await (plain as WorkspaceSql).execute(caller, sql, { statementTimeoutMs: 2000, maxRows: 500 })).rows };
      } catch (err) {
        return { code: (err as { code?: string }).code };
      }
    };
    const viaApi = async (sql: string) => {
      const r = await h.sql(owner.token, ws.id, sql);
      return r.status === 200 ? { rows: r.body.rows } : { code: r.body.code };
    };
    // Each form with three sets of constants: the first makes the template, the others are served from it.
    const forms: ((i: number) => string)[] = [
      (i) => `SELECT name FROM t WHERE name = '${['alpha', 'beta', "it''s"][i]}'`,
      (i) => `SELECT ${['1', '2', '3'][i]} AS one, '${['x', 'y', 'z'][i]}' AS label, name FROM t ORDER BY ${['1', '2', '3'][i]}, name`,
      (i) => `SELECT name, n FROM t ORDER BY ${[1, 2, 2][i]} DESC LIMIT ${[2, 3, 1][i]} OFFSET ${[0, 1, 0][i]}`,
      (i) => `SELECT n % ${[2, 3, 4][i]} AS k, count(*) FROM t GROUP BY 1 ORDER BY 1`,
      (i) => `SELECT DISTINCT ON (${[1, 1, 2][i]}) name, n FROM t ORDER BY ${[1, 1, 2][i]}, n`,
      (i) => `SELECT name FROM t WHERE big > ${['2999999999', '-3000000001', '4'][i]} ORDER BY name`,
      (i) => `SELECT name, d * ${['1.5', '-2', '0.001'][i]} AS x FROM t WHERE d > ${['-1', '2', '1.25'][i]} ORDER BY name`,
      (i) => `SELECT name FROM t WHERE at > '${['2026-01-15', '2026-02-15T00:00:00Z', '2025-12-31'][i]}' ORDER BY name`,
      (i) => `SELECT name FROM t WHERE at > now() - interval '${['1 day', '100 years', '3 months'][i]}' ORDER BY name`,
      (i) => `SELECT name, doc->>'${['a', 'b', 'c'][i]}' AS v, doc->'${['a', 'b', 'a'][i]}' AS w FROM t ORDER BY name`,
      (i) => `SELECT name FROM t WHERE '${['red', 'green', 'blue'][i]}' = ANY(tags) ORDER BY name`,
      (i) => `SELECT name FROM t WHERE name LIKE '${['a%', '%a', "%'%"][i]}' OR n IN (${['1, 2', '3, -2', '4, 4'][i]}) ORDER BY name`,
      (i) => `SELECT coalesce(NULL, '${['p', 'q', 'r'][i]}') AS c, '${['a', 'b', 'c'][i]}' || name AS s FROM t ORDER BY s`,
      (i) => `SELECT CASE WHEN n > ${[0, 2, -5][i]} THEN '${['pos', 'big', 'any'][i]}' ELSE 'other' END AS c FROM t ORDER BY name`,
      (i) => `SELECT x FROM (VALUES ('${['a', 'b', 'c'][i]}'), ('${['d', 'e', 'f'][i]}')) AS v(x) ORDER BY x`,
      (i) => `WITH c AS (SELECT name FROM t WHERE n >= ${[1, -2, 4][i]}) SELECT count(*) FROM c`,
      (i) => `SELECT name FROM t WHERE n = '${['1', 'x', '3'][i]}'`,
      (i) => `SELECT '${['1', '2', '3'][i]}'::int + ${[1, 2, 3][i]} AS s, ${['1.5', '2.5', '3.5'][i]}::numeric(5, 1) AS r`,
      (i) => `SELECT length('${['abc', '', 'é😀'][i]}') AS l, upper('${['abc', 'x', 'é'][i]}') AS u`,
      (i) => `SELECT name FROM t WHERE n BETWEEN ${[-5, 0, 2][i]} AND ${[5, 2, 3][i]} ORDER BY name`,
      // A literal read with a type modifier: as a parameter, interval '40' day would be 40 seconds, truncated to 0.
      (i) => `SELECT name FROM t WHERE at > '2026-03-15'::timestamptz - interval '${['1', '40', '100'][i]}' day ORDER BY name`,
      // Parameters PostgreSQL cannot type where the literals are unknown-typed ("any" arguments): run filled.
      (i) => `SELECT concat('${['a', 'b', 'c'][i]}', name) AS c, jsonb_build_object('${['k', 'l', 'm'][i]}', n) AS j FROM t ORDER BY name`,
      // int4 overflow stays an error (as PostgreSQL types the literal -2147483648: int4).
      (i) => `SELECT ${['-5', '-2147483648', '2147483647'][i]} - 1 AS x`,
    ];
    const before = h.services.sql.rewriteCacheStats;
    for (const form of forms) {
      for (let i = 0; i < 3; i++) {
        const sql = form(i);
        expect(await viaApi(sql), sql).toEqual(await reference(sql));
      }
    }
    // The same template text with parameters of other types is another prepared statement: int4 and numeric
    // divisions answer as each does, whichever was prepared first.
    for (const d of ['2', '3', '2.5', '3.5', '4', '4.5']) {
      const sql = `SELECT n / ${d} AS q FROM t ORDER BY name`;
      expect(await viaApi(sql), sql).toEqual(await reference(sql));
    }
    const after = h.services.sql.rewriteCacheStats;
    // Both ways of running a template were taken: prepared, and filled where a parameter is not a literal.
    expect(after.preparedReads - before.preparedReads).toBeGreaterThan(20);
    expect(after.filledReads - before.filledReads).toBeGreaterThan(0);
    // Most of them were found without a parse, by their lexical shape.
    expect(after.lexicalHits - before.lexicalHits).toBeGreaterThan(15);
  });

  test('a prepared SELECT * keeps working after the table gains a column', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE wide (name text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['wide']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO wide (name) VALUES ('a'), ('b')");
    const names = async (i: number) => {
      const r = await h.sql(owner.token, ws.id, `SELECT * FROM wide WHERE name <> 'z${i}' ORDER BY name`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.rows as Record<string, unknown>[];
    };
    // Enough runs that every connection of the workspace has prepared it.
    for (let i = 0; i < 12; i++) expect((await names(i)).map((r) => r.name)).toEqual(['a', 'b']);
    await h.sqlOk(owner.token, ws.id, 'ALTER TABLE wide ADD COLUMN extra int');
    for (let i = 0; i < 12; i++) {
      const rows = await names(100 + i);
      expect(rows.map((r) => [r.name, r.extra])).toEqual([
        ['a', null],
        ['b', null],
      ]);
    }
  });
});
