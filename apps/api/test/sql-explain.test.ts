// Issue 31, part 2: policy explain, view-as and row explain (docs/sql-and-policies.md#explain), through the real
// endpoints; the policy matrix (policy-matrix.test.ts) checks each explanation against what execute does.
import { type Harness, describe, expect, test } from './support.js';

type User = Awaited<ReturnType<Harness['user']>>;

const explain = (h: Harness, token: string, ws: string, body: Record<string, unknown>) => h.call('POST', `/api/v1/workspaces/${ws}/sql/explain`, { token, body });
const viewAs = (h: Harness, token: string, ws: string, sql: string, asUserId: string) => h.call('POST', `/api/v1/workspaces/${ws}/sql`, { token, body: { sql, as_user_id: asUserId } });

/**
 * A workspace with `docs` (id, owner_id, title, status, n): the owner reads all, alice reads her own non-secret
 * rows (an allow on owner_id, a deny on status), bob reads public ones. Rows: a1 (alice, draft), a2 (alice,
 * secret), b1 (bob, draft, public), b2 (bob, final).
 */
async function setUp(h: Harness) {
  const owner = await h.user('owner');
  const ws = await h.workspace(owner.token, 'Explain');
  const alice = await h.user('alice');
  const bob = await h.user('bob');
  await h.addMember(owner.token, ws.id, alice.email);
  await h.addMember(owner.token, ws.id, bob.email);
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE docs (id int PRIMARY KEY, owner_id uuid, title text, status text, public boolean)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['docs']);
  await h.sqlOk(
    owner.token,
    ws.id,
    `INSERT INTO docs VALUES (1, '${alice.id}', 'a1', 'draft', false), (2, '${alice.id}', 'a2', 'secret', false), (3, '${bob.id}', 'b1', 'draft', true), (4, '${bob.id}', 'b2', 'final', false)`,
  );
  const aliceGroup = await h.group(owner.token, ws.id, { name: 'alice', user_ids: [alice.id] });
  const bobGroup = await h.group(owner.token, ws.id, { name: 'bob', user_ids: [bob.id] });
  const own = await h.policy(owner.token, ws.id, { name: 'own rows', policy_group_id: aliceGroup, table_name: 'docs', operation: 'select', condition: { owner_id: '$user_id' } });
  const secret = await h.policy(owner.token, ws.id, { name: 'no secrets', policy_group_id: aliceGroup, mode: 'deny', table_name: 'docs', operation: 'select', condition: { status: 'secret' } });
  const open = await h.policy(owner.token, ws.id, { name: 'public rows', policy_group_id: bobGroup, table_name: 'docs', operation: 'select', condition: { public: true } });
  return { owner, ws, alice, bob, aliceGroup, bobGroup, policies: { own, secret, open } };
}

const titles = (body: any) => (body.rows as { title: string }[]).map((r) => r.title).sort();

describe('explain', () => {
  test('names the decision, the policies that apply, the predicate put in and the statement as it runs', async ({ h }) => {
    const { ws, alice, aliceGroup, policies } = await setUp(h);
    const r = await explain(h, alice.token, ws.id, { sql: 'SELECT title FROM docs' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ user_id: alice.id, operation: 'select', ddl_allowed: null, denied: null });
    expect(r.body.access).toHaveLength(1);
    const [docs] = r.body.access;
    expect(docs).toMatchObject({ table: 'docs', operation: 'select', decision: 'allow', denied_by: null, denial: null });
    expect(docs.policies).toEqual(
      expect.arrayContaining([
        { id: policies.own, name: 'own rows', policy_group_id: aliceGroup, mode: 'allow', condition: { owner_id: '$user_id' }, predicate: `owner_id = '${alice.id}'` },
        { id: policies.secret, name: 'no secrets', policy_group_id: aliceGroup, mode: 'deny', condition: { status: 'secret' }, predicate: "status = 'secret'" },
      ]),
    );
    expect(docs.policies).toHaveLength(2);
    expect(docs.predicate).toBe(`owner_id = '${alice.id}' AND NOT (status = 'secret')`);
    // The statement as it runs is exactly what execute runs.
    const ran = await h.sqlOk(alice.token, ws.id, 'SELECT title FROM docs');
    expect(r.body.transformed_sql).toBe(ran.executed_sql);
    expect(titles(ran)).toEqual(['a1']);
  });

  test('a denial says which: default deny, or the deny policy that matched; nothing would run', async ({ h }) => {
    const { owner, ws, alice, bob, aliceGroup } = await setUp(h);
    const none = await explain(h, bob.token, ws.id, { sql: "UPDATE docs SET title = 'x'" });
    expect(none.body.transformed_sql).toBeNull();
    expect(none.body.access.map((a: any) => `${a.operation}:${a.decision}`).sort()).toEqual(['select:allow', 'update:default_deny']);
    expect(none.body.denied).toBe('no allow policy grants update on table "docs" (default deny)');
    const exec = await h.sql(bob.token, ws.id, "UPDATE docs SET title = 'x'");
    expect(exec.status).toBe(403);
    expect(exec.body.details).toBe(none.body.denied);

    await h.policy(owner.token, ws.id, { name: 'never', policy_group_id: aliceGroup, mode: 'deny', table_name: 'docs', operation: 'select' });
    const denied = await explain(h, alice.token, ws.id, { sql: 'SELECT * FROM docs' });
    expect(denied.body.access[0]).toMatchObject({ decision: 'deny', denied_by: 'never', predicate: null });
    expect(denied.body.access[0].policies.map((p: any) => p.name).sort()).toEqual(['never', 'no secrets', 'own rows']);
    expect((await h.sql(alice.token, ws.id, 'SELECT * FROM docs')).body.details).toBe(denied.body.denied);

    // A schema change: who may run it.
    expect((await explain(h, alice.token, ws.id, { sql: 'CREATE TABLE t (id int)' })).body).toMatchObject({ operation: 'ddl', ddl_allowed: false, access: [] });
    expect((await explain(h, owner.token, ws.id, { sql: 'CREATE TABLE t (id int)' })).body.ddl_allowed).toBe(true);
  });

  test('as another member: admins and policy editors only; a member asking is 403, a non-member 400', async ({ h }) => {
    const { owner, ws, alice, bob } = await setUp(h);
    const asAlice = await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM docs', as_user_id: alice.id });
    expect(asAlice.status).toBe(200);
    expect(asAlice.body.user_id).toBe(alice.id);
    expect(asAlice.body.access[0].policies.map((p: any) => p.name).sort()).toEqual(['no secrets', 'own rows']);

    const refused = await explain(h, alice.token, ws.id, { sql: 'SELECT * FROM docs', as_user_id: bob.id });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('FORBIDDEN');
    expect((await viewAs(h, alice.token, ws.id, 'SELECT * FROM docs', bob.id)).status).toBe(403);

    const stranger = await h.user('stranger');
    const notMember = await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM docs', as_user_id: stranger.id });
    expect(notMember.status).toBe(400);
    expect(notMember.body.code).toBe('VALIDATION_ERROR');

    // A policy editor group lets its members act as others.
    const editors = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [alice.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { policy_editor_policy_group_id: editors } });
    expect((await explain(h, alice.token, ws.id, { sql: 'SELECT * FROM docs', as_user_id: bob.id })).status).toBe(200);
    expect((await explain(h, bob.token, ws.id, { sql: 'SELECT * FROM docs', as_user_id: alice.id })).status).toBe(403);
  });
});

describe('view as a member', () => {
  test('a read under both the caller\'s and the member\'s select policies, audited as such', async ({ h }) => {
    const { owner, ws, alice, bob } = await setUp(h);
    const r = await viewAs(h, owner.token, ws.id, 'SELECT title FROM docs', alice.id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(titles(r.body)).toEqual(['a1']);
    expect(titles((await viewAs(h, owner.token, ws.id, 'SELECT title FROM docs', bob.id)).body)).toEqual(['b1']);

    // An editor whose own policy shows less never sees more through someone else's eyes.
    const editors = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [bob.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { policy_editor_policy_group_id: editors } });
    const bobAsOwner = await viewAs(h, bob.token, ws.id, 'SELECT title FROM docs', owner.id);
    expect(titles(bobAsOwner.body)).toEqual(['b1']);
    // A member with no select policy: denied, and the denial says it is theirs.
    const carol = await h.user('carol');
    await h.addMember(owner.token, ws.id, carol.email);
    const none = await viewAs(h, owner.token, ws.id, 'SELECT title FROM docs', carol.id);
    expect(none.status).toBe(403);
    expect(none.body.details).toContain(`as user ${carol.id}`);

    // Reads only.
    const write = await viewAs(h, owner.token, ws.id, "UPDATE docs SET title = 'x'", alice.id);
    expect(write.status).toBe(400);
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT title FROM docs ORDER BY id')).rows.map((x: any) => x.title)).toEqual(['a1', 'a2', 'b1', 'b2']);

    await h.services.sql.flushReadAudits();
    const audit = await h.call('GET', '/api/v1/audit-logs?action=execute_sql_select&limit=200', { token: owner.token, workspace: ws.id });
    const asEntries = audit.body.filter((e: any) => e.details?.as_user_id === alice.id);
    expect(asEntries.length).toBeGreaterThanOrEqual(1);
    expect(asEntries[0].user_id).toBe(owner.id);
  });

  test('with a draft policy: the member\'s rows as if it were saved (in place of the one it edits), nothing saved; checked as create checks', async ({ h }) => {
    const { owner, ws, alice, bob, aliceGroup, bobGroup, policies } = await setUp(h);
    const draftAs = (asUserId: string, draft_policy: Record<string, unknown>, token = owner.token) =>
      h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, { token, body: { sql: 'SELECT title FROM docs', as_user_id: asUserId, draft_policy } });
    // A new allow for bob: his public rows and, with the draft, his own.
    const added = await draftAs(bob.id, { policy_group_id: bobGroup, mode: 'allow', table_name: 'docs', operation: 'select', condition: { owner_id: '$user_id' } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(titles(added.body)).toEqual(['b1', 'b2']);
    // Editing alice's own-rows policy (the draft takes its place): every draft row; her deny still holds.
    const edited = await draftAs(alice.id, { policy_id: policies.own, policy_group_id: aliceGroup, mode: 'allow', table_name: 'docs', operation: 'select', condition: { status: 'draft' } });
    expect(titles(edited.body)).toEqual(['a1', 'b1']);
    // A draft deny without condition: denied, as saving it would.
    const deny = await draftAs(alice.id, { policy_group_id: aliceGroup, mode: 'deny', table_name: 'docs', operation: 'select' });
    expect(deny.status).toBe(403);
    expect(deny.body.details).toContain(`as user ${alice.id}`);
    // Nothing was saved: the member's view is as before.
    expect(titles((await viewAs(h, owner.token, ws.id, 'SELECT title FROM docs', alice.id)).body)).toEqual(['a1']);
    expect((await h.call('GET', '/api/v1/policies', { token: owner.token, workspace: ws.id })).body).toHaveLength(7);
    // Checked as create checks: an unknown column, an unknown group.
    const badColumn = await draftAs(alice.id, { policy_group_id: aliceGroup, mode: 'allow', table_name: 'docs', operation: 'select', condition: { nope: 1 } });
    expect(badColumn.status).toBe(400);
    expect(JSON.stringify(badColumn.body)).toContain('nope');
    expect((await draftAs(alice.id, { policy_id: crypto.randomUUID(), policy_group_id: aliceGroup, mode: 'allow', table_name: 'docs', operation: 'select' })).status).toBe(404);
    const badGroup = await draftAs(alice.id, { policy_group_id: crypto.randomUUID(), mode: 'allow', table_name: 'docs', operation: 'select' });
    expect(badGroup.status).toBe(400);
    // The caller's own policies still bound it, the permission is view-as's, and it needs as_user_id.
    expect((await draftAs(bob.id, { policy_group_id: bobGroup, mode: 'allow', table_name: 'docs', operation: 'select' }, alice.token)).status).toBe(403);
    const alone = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, {
      token: owner.token,
      body: { sql: 'SELECT title FROM docs', draft_policy: { policy_group_id: bobGroup, mode: 'allow', table_name: 'docs', operation: 'select' } },
    });
    expect(alone.status).toBe(400);
    // Audited as the caller's read as the member, with the draft.
    await h.services.sql.flushReadAudits();
    const audit = await h.call('GET', '/api/v1/audit-logs?action=execute_sql_select&limit=200', { token: owner.token, workspace: ws.id });
    const drafts = audit.body.filter((e: any) => e.details?.draft_policy);
    expect(drafts.length).toBeGreaterThanOrEqual(2);
    expect(drafts.find((e: any) => e.details.draft_policy.policy_id === policies.own)).toMatchObject({ user_id: owner.id, details: { as_user_id: alice.id } });
  });

  test('never returns a row the caller\'s own read would not, nor one the member could not read (random policies and rows)', async ({ h }) => {
    const owner = await h.user('owner');
    const ws = await h.workspace(owner.token, 'Property');
    const users: User[] = [await h.user('u0'), await h.user('u1'), await h.user('u2')];
    for (const u of users) await h.addMember(owner.token, ws.id, u.email, 'admin');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE t (id int PRIMARY KEY, owner_id uuid, color text, n int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['t']);
    // A fixed-seed generator, so a failure is reproducible.
    let seed = 20261204;
    const rand = (k: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    const colors = ['red', 'green', 'blue'];
    const values = Array.from({ length: 30 }, (_, i) => `(${i}, '${users[rand(3)]!.id}', '${colors[rand(3)]}', ${rand(10)})`);
    await h.sqlOk(owner.token, ws.id, `INSERT INTO t VALUES ${values.join(', ')}`);
    const conditions = [
      () => ({ owner_id: '$user_id' }),
      () => ({ color: colors[rand(3)] }),
      () => ({ n: { $gte: rand(10) } }),
      () => ({ color: { $in: [colors[rand(3)], colors[rand(3)]] } }),
      () => null,
    ];
    for (let round = 0; round < 6; round++) {
      const groups: string[] = [];
      for (const [i, u] of users.entries()) {
        const g = await h.group(owner.token, ws.id, { name: `r${round}u${i}`, user_ids: [u.id] });
        groups.push(g);
        const allows = 1 + rand(2);
        for (let k = 0; k < allows; k++) {
          const c = conditions[rand(conditions.length)]!();
          await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 't', operation: 'select', ...(c ? { condition: c } : {}) });
        }
        if (rand(2) === 0) await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 't', operation: 'select', mode: 'deny', condition: { color: colors[rand(3)] } });
      }
      const own = new Map<string, Set<number>>();
      for (const u of users) own.set(u.id, new Set((await h.sqlOk(u.token, ws.id, 'SELECT id FROM t')).rows.map((r: any) => r.id)));
      for (const viewer of users) {
        for (const member of users) {
          if (viewer === member) continue;
          const r = await viewAs(h, viewer.token, ws.id, 'SELECT id FROM t', member.id);
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          const seen = new Set<number>(r.body.rows.map((x: any) => x.id));
          const expected = [...own.get(viewer.id)!].filter((id) => own.get(member.id)!.has(id)).sort((a, b) => a - b);
          expect([...seen].sort((a, b) => a - b), `round ${round}`).toEqual(expected);
        }
      }
      // The next round's policies replace these.
      const list = await h.call('GET', '/api/v1/policies?limit=1000', { token: owner.token, workspace: ws.id });
      for (const p of list.body.items ?? list.body) if (groups.includes(p.policy_group_id)) await h.call('DELETE', `/api/v1/policies/${p.id}`, { token: owner.token, workspace: ws.id });
    }
  });
});

describe('hostile text through explain and view-as', () => {
  test('quotes, comment openers, dollar quotes and backslashes in literals and identifiers stay what they are', async ({ h }) => {
    const { owner, ws, alice, aliceGroup, policies } = await setUp(h);
    const value = "it's -- not /* a */ $$ comment $t$ \\ end";
    await h.sqlOk(owner.token, ws.id, `INSERT INTO docs VALUES (5, '${alice.id}', '${value.replace(/'/g, "''")}', 'draft', false)`);
    const sql = `SELECT title AS "we""ird -- /* $$", $$ a $t$ b $$ AS "d$q" FROM docs WHERE title = '${value.replace(/'/g, "''")}' OR title = E'a1\\\\' OR title = 'a1'`;
    const ran = await h.sqlOk(alice.token, ws.id, sql);
    expect(ran.rows).toEqual(expect.arrayContaining([{ 'we"ird -- /* $$': value, d$q: ' a $t$ b ' }, { 'we"ird -- /* $$': 'a1', d$q: ' a $t$ b ' }]));
    expect(ran.rows).toHaveLength(2);
    const ex = await explain(h, alice.token, ws.id, { sql });
    expect(ex.body.transformed_sql).toBe(ran.executed_sql);
    const seen = await viewAs(h, owner.token, ws.id, sql, alice.id);
    expect(seen.status, JSON.stringify(seen.body)).toBe(200);
    expect(seen.body.rows).toEqual(expect.arrayContaining(ran.rows));
    expect(seen.body.rows).toHaveLength(2);
    // A draft policy's condition value with the same: compiled as a saved one is, it matches that row and no other.
    const drafted = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, {
      token: owner.token,
      body: { sql: 'SELECT title FROM docs', as_user_id: alice.id, draft_policy: { policy_id: policies.own, policy_group_id: aliceGroup, mode: 'allow', table_name: 'docs', operation: 'select', condition: { title: value } } },
    });
    expect(drafted.status, JSON.stringify(drafted.body)).toBe(200);
    expect(drafted.body.rows).toEqual([{ title: value }]);
    // Nothing was run but the reads: the table holds what it held.
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT count(*)::int AS n FROM docs')).rows[0].n).toBe(5);
  });
});

describe('row explain', () => {
  test('which conditions of which policy one readable row matches, for the user explained', async ({ h }) => {
    const { owner, ws, alice } = await setUp(h);
    const r = await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM docs', as_user_id: alice.id, row_id: '2' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.row).toMatchObject({ table: 'docs', user_id: alice.id, decision: 'allow', visible: false });
    const byName = Object.fromEntries(r.body.row.policies.map((p: any) => [p.name, p]));
    expect(byName['own rows']).toMatchObject({ mode: 'allow', matches: true, conditions: [{ column: 'owner_id', condition: { owner_id: '$user_id' }, matches: true }] });
    expect(byName['no secrets']).toMatchObject({ mode: 'deny', matches: true, conditions: [{ column: 'status', matches: true }] });
    const a1 = await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM docs', as_user_id: alice.id, row_id: '1' });
    expect(a1.body.row.visible).toBe(true);
    expect(a1.body.row.policies.find((p: any) => p.name === 'no secrets').matches).toBe(false);
    // The caller's own view: every row, through the unconditional allow.
    const mine = await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM docs', row_id: '4' });
    expect(mine.body.row).toMatchObject({ user_id: owner.id, visible: true });
    expect(mine.body.row.policies.every((p: any) => p.conditions.length === 0 && p.matches)).toBe(true);
  });

  test('a row the caller cannot read is not found, exactly like one that does not exist', async ({ h }) => {
    const { ws, alice } = await setUp(h);
    // Row 3 is bob's: alice cannot read it. Row 99 does not exist.
    const hidden = await explain(h, alice.token, ws.id, { sql: 'SELECT * FROM docs', row_id: '3' });
    const missing = await explain(h, alice.token, ws.id, { sql: 'SELECT * FROM docs', row_id: '99' });
    expect(hidden.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(hidden.body).toEqual(missing.body);
    // Her own secret row is hers to read? No: the deny hides it, so it is not found either.
    expect((await explain(h, alice.token, ws.id, { sql: 'SELECT * FROM docs', row_id: '2' })).body).toEqual(missing.body);
    expect((await explain(h, alice.token, ws.id, { sql: 'SELECT * FROM docs', row_id: '1' })).status).toBe(200);
  });

  test('hostile text in row_id stays a value; a statement of two tables or a write is refused', async ({ h }) => {
    const { owner, ws } = await setUp(h);
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE labels (id text PRIMARY KEY, name text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['labels']);
    const hostile = "x' OR true; DROP TABLE docs; -- $$ /* \\ $t$";
    await h.sqlOk(owner.token, ws.id, `INSERT INTO labels VALUES ('${hostile.replace(/'/g, "''")}', 'odd'), ('plain', 'p')`);
    const r = await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM labels', row_id: hostile });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.row.visible).toBe(true);
    expect((await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM labels', row_id: "nope' OR '1'='1" })).status).toBe(404);
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT count(*)::int AS n FROM docs')).rows[0].n).toBe(4);
    const two = await explain(h, owner.token, ws.id, { sql: 'SELECT * FROM docs, labels', row_id: '1' });
    expect(two.status).toBe(400);
    const write = await explain(h, owner.token, ws.id, { sql: 'DELETE FROM docs', row_id: '1' });
    expect(write.status).toBe(400);
  });

  test("another workspace's tables and rows are not reachable through explain", async ({ h }) => {
    const a = await setUp(h);
    const b = await setUp(h);
    const r = await explain(h, b.owner.token, b.ws.id, { sql: 'SELECT * FROM docs', row_id: '1' });
    expect(r.status).toBe(200);
    // B's own docs row 1 (alice of B): nothing of A's appears.
    expect(JSON.stringify(r.body)).not.toContain(a.ws.id);
    expect(JSON.stringify(r.body)).not.toContain(a.alice.id);
    expect((await explain(h, a.owner.token, b.ws.id, { sql: 'SELECT * FROM docs' })).status).toBe(403);
    expect((await explain(h, b.owner.token, b.ws.id, { sql: 'SELECT * FROM docs', as_user_id: a.alice.id })).status).toBe(400);
  });
});
