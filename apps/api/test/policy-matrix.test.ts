import { describe, expect, test } from './support.js';

/**
 * Table-driven policy suite on a real PostgreSQL: policies × subject × statement → status and exact rows.
 * Seed (owner_id, title, status, public, n): alice a1 draft false 1, alice a2 secret false 2,
 * bob b1 draft true 3, bob b2 final false 4.
 */
type Who = 'alice' | 'bob' | 'stf';
interface P {
  who: Who | 'both';
  op: 'select' | 'insert' | 'update' | 'delete';
  mode?: 'allow' | 'deny';
  condition?: unknown;
}
interface Case {
  name: string;
  policies: P[];
  as: Who | 'anonymous-stf';
  sql: string;
  status: number;
  code?: string;
  /** Titles returned by the statement, sorted. */
  rows?: string[];
  /** `title:status:n` of every live row after the statement, as the owner sees it. */
  after?: string[];
}

const allowAllOps = (who: Who | 'both', condition?: unknown): P[] =>
  (['select', 'insert', 'update', 'delete'] as const).map((op) => ({ who, op, condition }));
const SEED = ['a1:draft:1', 'a2:secret:2', 'b1:draft:3', 'b2:final:4'];

const cases: Case[] = [
  { name: 'default deny', policies: [], as: 'alice', sql: 'SELECT title FROM docs', status: 403, code: 'POLICY_DENIED' },
  { name: 'unconditional allow', policies: [{ who: 'alice', op: 'select' }], as: 'alice', sql: 'SELECT title FROM docs', status: 200, rows: ['a1', 'a2', 'b1', 'b2'] },
  { name: '$user_id', policies: [{ who: 'alice', op: 'select', condition: { owner_id: '$user_id' } }], as: 'alice', sql: 'SELECT title FROM docs', status: 200, rows: ['a1', 'a2'] },
  { name: '{$var: user_id}', policies: [{ who: 'bob', op: 'select', condition: { owner_id: { $eq: { $var: 'user_id' } } } }], as: 'bob', sql: 'SELECT title FROM docs', status: 200, rows: ['b1', 'b2'] },
  {
    name: 'several allows are OR-ed',
    policies: [
      { who: 'alice', op: 'select', condition: { owner_id: '$user_id' } },
      { who: 'alice', op: 'select', condition: { public: true } },
    ],
    as: 'alice',
    sql: 'SELECT title FROM docs',
    status: 200,
    rows: ['a1', 'a2', 'b1'],
  },
  {
    name: 'conditional deny removes rows',
    policies: [{ who: 'alice', op: 'select' }, { who: 'alice', op: 'select', mode: 'deny', condition: { status: 'secret' } }],
    as: 'alice',
    sql: 'SELECT title FROM docs',
    status: 200,
    rows: ['a1', 'b1', 'b2'],
  },
  {
    name: 'unconditional deny wins over allow',
    policies: [{ who: 'alice', op: 'select' }, { who: 'alice', op: 'select', mode: 'deny' }],
    as: 'alice',
    sql: 'SELECT title FROM docs',
    status: 403,
    code: 'POLICY_DENIED',
  },
  { name: 'another group allow does not apply', policies: [{ who: 'bob', op: 'select' }], as: 'alice', sql: 'SELECT title FROM docs', status: 403 },
  { name: 'another operation does not apply', policies: [{ who: 'alice', op: 'update' }], as: 'alice', sql: 'SELECT title FROM docs', status: 403 },
  { name: '$in', policies: [{ who: 'alice', op: 'select', condition: { status: { $in: ['draft', 'final'] } } }], as: 'alice', sql: 'SELECT title FROM docs', status: 200, rows: ['a1', 'b1', 'b2'] },
  { name: 'empty $in matches nothing', policies: [{ who: 'alice', op: 'select', condition: { status: { $in: [] } } }], as: 'alice', sql: 'SELECT title FROM docs', status: 200, rows: [] },
  { name: '$gt and $lte on one field', policies: [{ who: 'alice', op: 'select', condition: { n: { $gt: 1, $lte: 3 } } }], as: 'alice', sql: 'SELECT title FROM docs', status: 200, rows: ['a2', 'b1'] },
  { name: '$ne and $null', policies: [{ who: 'alice', op: 'select', condition: { status: { $ne: 'draft', $null: false } } }], as: 'alice', sql: 'SELECT title FROM docs', status: 200, rows: ['a2', 'b2'] },
  { name: 'fields are AND-ed', policies: [{ who: 'alice', op: 'select', condition: { owner_id: '$user_id', status: 'draft' } }], as: 'alice', sql: 'SELECT title FROM docs', status: 200, rows: ['a1'] },
  {
    name: 'the filter survives OR in the user WHERE',
    policies: [{ who: 'alice', op: 'select', condition: { owner_id: '$user_id' } }],
    as: 'alice',
    sql: "SELECT title FROM docs WHERE title = 'b1' OR true",
    status: 200,
    rows: ['a1', 'a2'],
  },
  {
    name: 'joins filter both sides',
    policies: [{ who: 'alice', op: 'select', condition: { owner_id: '$user_id' } }],
    as: 'alice',
    sql: 'SELECT DISTINCT e.title FROM docs d LEFT JOIN docs e ON true',
    status: 200,
    rows: ['a1', 'a2'],
  },
  {
    name: 'subqueries and CTEs are filtered',
    policies: [{ who: 'alice', op: 'select', condition: { owner_id: '$user_id' } }],
    as: 'alice',
    sql: "WITH x AS (SELECT * FROM docs) SELECT title FROM x WHERE n IN (SELECT n FROM docs) UNION SELECT title FROM (SELECT * FROM docs) s",
    status: 200,
    rows: ['a1', 'a2'],
  },
  {
    name: 'INSERT of an own row',
    policies: [{ who: 'alice', op: 'insert', condition: { owner_id: '$user_id' } }],
    as: 'alice',
    sql: "INSERT INTO docs (owner_id, title, status, n) VALUES ('{alice}', 'a3', 'draft', 5)",
    status: 200,
    after: [...SEED, 'a3:draft:5'],
  },
  {
    name: 'INSERT of a row outside the filter fails whole',
    policies: [{ who: 'alice', op: 'insert', condition: { owner_id: '$user_id' } }],
    as: 'alice',
    sql: "INSERT INTO docs (owner_id, title, status, n) VALUES ('{alice}', 'a3', 'draft', 5), ('{bob}', 'b3', 'draft', 6)",
    status: 403,
    code: 'POLICY_DENIED',
    after: SEED,
  },
  {
    name: 'INSERT … SELECT reads through the select filter',
    policies: [
      { who: 'alice', op: 'insert' },
      { who: 'alice', op: 'select', condition: { owner_id: '$user_id' } },
    ],
    as: 'alice',
    sql: "INSERT INTO docs (owner_id, title, status, n) SELECT owner_id, title || 'c', status, n FROM docs",
    status: 200,
    after: [...SEED, 'a1c:draft:1', 'a2c:secret:2'],
  },
  {
    name: 'UPDATE touches only rows in the filter',
    policies: [{ who: 'alice', op: 'update', condition: { owner_id: '$user_id' } }, { who: 'alice', op: 'select' }],
    as: 'alice',
    sql: "UPDATE docs SET n = n + 10 WHERE title = 'b1' OR true",
    status: 200,
    after: ['a1:draft:11', 'a2:secret:12', 'b1:draft:3', 'b2:final:4'],
  },
  {
    name: 'UPDATE moving a row out of the filter fails, nothing changed',
    policies: [{ who: 'alice', op: 'update', condition: { owner_id: '$user_id' } }, { who: 'alice', op: 'select' }],
    as: 'alice',
    sql: "UPDATE docs SET owner_id = '{bob}', n = 0",
    status: 403,
    code: 'POLICY_DENIED',
    after: SEED,
  },
  {
    name: 'UPDATE with a conditional deny',
    policies: [{ who: 'alice', op: 'update' }, { who: 'alice', op: 'update', mode: 'deny', condition: { status: 'secret' } }, { who: 'alice', op: 'select' }],
    as: 'alice',
    sql: "UPDATE docs SET status = 'x' WHERE status <> 'secret'",
    status: 200,
    after: ['a1:x:1', 'a2:secret:2', 'b1:x:3', 'b2:x:4'],
  },
  {
    name: 'DELETE is a soft delete within the filter',
    policies: [{ who: 'alice', op: 'delete', condition: { owner_id: '$user_id' } }, { who: 'alice', op: 'select' }],
    as: 'alice',
    sql: 'DELETE FROM docs',
    status: 200,
    after: ['b1:draft:3', 'b2:final:4'],
  },
  {
    name: 'RETURNING needs select permission',
    policies: [{ who: 'alice', op: 'update' }],
    as: 'alice',
    sql: "UPDATE docs SET n = 0 WHERE title = 'a1' RETURNING title",
    status: 403,
    code: 'POLICY_DENIED',
    after: SEED,
  },
  {
    name: 'UPDATE … RETURNING never reaches a row outside the select filter',
    policies: [{ who: 'alice', op: 'update' }, { who: 'alice', op: 'select', condition: { owner_id: '$user_id' } }],
    as: 'alice',
    sql: "UPDATE docs SET n = 0 WHERE title = 'b1' RETURNING title",
    status: 200,
    rows: [],
    after: SEED,
  },
  {
    name: 'UPDATE and DELETE need select permission (they read the rows they change)',
    policies: [{ who: 'alice', op: 'update' }, { who: 'alice', op: 'delete' }],
    as: 'alice',
    sql: 'UPDATE docs SET n = 0',
    status: 403,
    code: 'POLICY_DENIED',
    after: SEED,
  },
  {
    name: 'UPDATE touches only rows the caller may also select',
    policies: [{ who: 'alice', op: 'update' }, { who: 'alice', op: 'select', condition: { owner_id: '$user_id' } }],
    as: 'alice',
    sql: 'UPDATE docs SET n = n + 10',
    status: 200,
    after: ['a1:draft:11', 'a2:secret:12', 'b1:draft:3', 'b2:final:4'],
  },
  {
    name: 'DELETE touches only rows the caller may also select',
    policies: [{ who: 'alice', op: 'delete' }, { who: 'alice', op: 'select', condition: { public: true } }],
    as: 'alice',
    sql: 'DELETE FROM docs',
    status: 200,
    after: ['a1:draft:1', 'a2:secret:2', 'b2:final:4'],
  },
  {
    name: 'RETURNING within the select filter',
    policies: [...allowAllOps('alice', { owner_id: '$user_id' })],
    as: 'alice',
    sql: "UPDATE docs SET n = 0 RETURNING title",
    status: 200,
    rows: ['a1', 'a2'],
    after: ['a1:draft:0', 'a2:secret:0', 'b1:draft:3', 'b2:final:4'],
  },
  {
    name: 'ON CONFLICT DO UPDATE does not update rows outside the update filter',
    policies: [{ who: 'alice', op: 'insert' }, { who: 'alice', op: 'update', condition: { owner_id: '$user_id' } }, { who: 'alice', op: 'select' }],
    as: 'alice',
    sql: "INSERT INTO docs (owner_id, title, status, n) VALUES ('{alice}', 'b1', 'draft', 9), ('{alice}', 'a1', 'draft', 9) ON CONFLICT (title) DO UPDATE SET n = excluded.n",
    status: 200,
    after: ['a1:draft:9', 'a2:secret:2', 'b1:draft:3', 'b2:final:4'],
  },
  {
    name: 'STF subject: only STF groups apply, $user_id is the executing user',
    policies: [{ who: 'stf', op: 'select', condition: { owner_id: '$user_id' } }, { who: 'alice', op: 'select' }],
    as: 'stf',
    sql: 'SELECT title FROM docs',
    status: 200,
    rows: ['a1', 'a2'],
  },
  {
    name: 'STF subject run anonymously: $user_id is NULL and matches nothing',
    policies: [{ who: 'stf', op: 'select', condition: { owner_id: '$user_id' } }],
    as: 'anonymous-stf',
    sql: 'SELECT title FROM docs',
    status: 200,
    rows: [],
  },
  { name: 'a user allow does not apply to an STF', policies: [{ who: 'both', op: 'select' }], as: 'stf', sql: 'SELECT title FROM docs', status: 403 },
];

const STF_ID = '01900000-0000-7000-8000-0000000005f1';


describe.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
  test('status, rows and table state', async ({ h, owner }) => {
    const ws = await h.workspace(owner.token, 'matrix');
    const alice = await h.user('alice');
    const bob = await h.user('bob');
    await h.addMember(owner.token, ws.id, alice.email);
    await h.addMember(owner.token, ws.id, bob.email);
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE docs (owner_id uuid, title text UNIQUE, status text, public boolean, n int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['docs']);
    await h.sqlOk(
      owner.token,
      ws.id,
      `INSERT INTO docs (owner_id, title, status, public, n) VALUES
        ('${alice.id}', 'a1', 'draft', false, 1), ('${alice.id}', 'a2', 'secret', false, 2),
        ('${bob.id}', 'b1', 'draft', true, 3), ('${bob.id}', 'b2', 'final', false, 4)`,
    );
    const groups = {
      alice: await h.group(owner.token, ws.id, { name: 'alice', user_ids: [alice.id] }),
      bob: await h.group(owner.token, ws.id, { name: 'bob', user_ids: [bob.id] }),
      both: await h.group(owner.token, ws.id, { name: 'both', user_ids: [alice.id, bob.id] }),
      stf: await h.group(owner.token, ws.id, { name: 'stf', stf_ids: [STF_ID] }),
    };
    for (const p of c.policies) {
      await h.policy(owner.token, ws.id, {
        policy_group_id: groups[p.who],
        table_name: 'docs',
        operation: p.op,
        mode: p.mode ?? 'allow',
        ...(p.condition === undefined ? {} : { condition: p.condition }),
      });
    }
    const sql = c.sql.replaceAll('{alice}', alice.id).replaceAll('{bob}', bob.id);
    let status: number;
    let body: any;
    if (c.as === 'alice' || c.as === 'bob') {
      const r = await h.sql((c.as === 'alice' ? alice : bob).token, ws.id, sql);
      status = r.status;
      body = r.body;
    } else {
      try {
        body = await h.services.sql.execute(
          { workspaceId: ws.id, ddlGroupId: null, isAdmin: false, subject: { kind: 'stf', stfId: STF_ID, userId: c.as === 'stf' ? alice.id : null } },
          sql,
          { statementTimeoutMs: 2000, maxRows: 100 },
        );
        status = 200;
      } catch (e: any) {
        status = e.status;
        body = { code: e.code, details: e.details };
      }
    }
    expect(status, JSON.stringify(body)).toBe(c.status);
    if (c.code) expect(body.code).toBe(c.code);
    if ((c.as === 'alice' || c.as === 'bob') && (status === 200 || body.code === 'POLICY_DENIED')) {
      // The explanation (docs/sql-and-policies.md#explain) names exactly the policies the rewriter weighed, and the
      // statement it describes is the one that ran, or its denial the one answered.
      const user = c.as === 'alice' ? alice : bob;
      const ex = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/explain`, { token: owner.token, body: { sql, as_user_id: user.id } });
      expect(ex.status, JSON.stringify(ex.body)).toBe(200);
      for (const access of ex.body.access) {
        const applying = c.policies.filter((p) => p.op === access.operation && (p.who === c.as || p.who === 'both'));
        expect(access.policies.map((p: any) => p.mode).sort(), `${access.table}:${access.operation}`).toEqual(applying.map((p) => p.mode ?? 'allow').sort());
      }
      if (status === 200) expect(ex.body.transformed_sql).toBe(body.executed_sql);
      else if (/would be outside your/.test(body.details)) {
        // Denied by the row check at run time (a written row outside the policy): the policies allowed the statement.
        expect(ex.body.denied).toBeNull();
        expect(ex.body.transformed_sql).toContain('wds_row_check');
      } else {
        expect(ex.body.transformed_sql).toBeNull();
        expect(ex.body.denied).toBe(body.details);
      }
    }
    if (c.rows) expect(body.rows.map((r: any) => r.title).sort()).toEqual(c.rows);
    if (c.after) {
      const state = await h.sqlOk(owner.token, ws.id, 'SELECT title, status, n FROM docs ORDER BY title');
      expect(state.rows.map((r: any) => `${r.title}:${r.status}:${r.n}`)).toEqual([...c.after].sort());
    }
  });
});
