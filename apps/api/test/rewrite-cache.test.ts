import { afterAll } from 'vitest';
import { Harness, describe, expect, test } from './support.js';

/**
 * The rewrite cache (packages/workspace-sql/src/rewrite-cache.ts): a statement whose shape was rewritten before is
 * its template filled with the new constants. It must never serve a rewrite made under other policies, groups,
 * columns or for another caller, in this process or after a change made by another one, and statements that
 * differ only in constants must never share results.
 */
let other: Harness | undefined;
afterAll(async () => {
  await other?.close();
});

async function eventually(check: () => Promise<boolean>, ms = 3000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`not within ${ms} ms`);
}

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
});
