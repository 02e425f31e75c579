import { ALLOWED_FUNCTIONS, loadParser, parseOne } from '@wds/sql-rewriter';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Harness, hex, type Res, short, underscored, until } from './support.js';

/**
 * Regression tests for the red-team review of the SQL core (issue 13), through the real endpoints.
 *
 * Workspace B (victim, another user) holds B_CANARY in `secrets` and `notes`. Workspace A: its owner (admin), the
 * attacker (plain member with unconditional policies on `notes` and `items`, and on `t` a select policy
 * `{ owner_id: "$user_id" }` next to unconditional insert/update/delete), a colleague who owns the hidden row of
 * `t` (A_HIDDEN canary), and a "blind" member with insert/update/delete on `t` and no select policy at all.
 *
 * Nothing of B (canary, id in any spelling) and nothing of the hidden row may ever appear in a response to A,
 * unless the statement itself contained it; no answer may be a 5xx.
 */

const B_CANARY = 'B_CANARY_9c1e';
const A_HIDDEN = 'A_HIDDEN_CANARY_6d2f';
/** The hidden row's exclusion range: its bounds must never show up either. */
const HIDDEN_SPAN = '[4242,4343)';

type User = Awaited<ReturnType<Harness['user']>>;
let h: Harness;
let ownerA: User;
let attacker: User;
let colleague: User;
let blind: User;
let ownerB: User;
let A: { id: string };
let B: { id: string };
let AP: string;
let BP: string;
let secretTokens: [string, string][];
let snapshotB: string;
let snapshotHidden: string;


/** Everything the attacker must never see, unless the statement itself contains it. */
function leaks(label: string, sent: string, r: Res): string[] {
  const problems: string[] = [];
  if (r.status >= 500) problems.push(`${label}: status ${r.status} ${short(r.body)}`);
  const text = (JSON.stringify(r.body) ?? '').toLowerCase();
  const s = sent.toLowerCase();
  for (const [name, token] of secretTokens) {
    const t = token.toLowerCase();
    if (!s.includes(t) && text.includes(t)) problems.push(`${label}: response contains ${name}: ${short(r.body)}`);
  }
  return problems;
}

/** Values in result rows that prove a role switch or cross-workspace read (whatever the statement contained). */
function rowLeaks(label: string, r: Res): string[] {
  const rows = JSON.stringify(r.body?.rows ?? []);
  const problems: string[] = [];
  if (rows.includes(B_CANARY)) problems.push(`${label}: rows hold B's canary ${short(rows)}`);
  if (/"postgres"|<[a-z_]*>postgres</.test(rows)) problems.push(`${label}: rows show the postgres role ${short(rows)}`);
  if (rows.includes(A_HIDDEN)) problems.push(`${label}: rows hold the hidden canary ${short(rows)}`);
  return problems;
}

function walk(node: unknown, fn: (key: string, value: any) => void): void {
  const stack: unknown[] = [node];
  while (stack.length) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        fn(k, x);
        stack.push(x);
      }
    }
  }
}

const stringLeaves = (tree: unknown): Set<string> => {
  const out = new Set<string>();
  walk(tree, (_k, v) => {
    if (typeof v === 'string') out.add(v);
  });
  return out;
};

/** Function calls in a parsed statement that are neither on the allow-list nor the service's own helpers. */
function foreignCalls(tree: unknown): string[] {
  const out: string[] = [];
  walk(tree, (k, v) => {
    if (k !== 'FuncCall') return;
    const name = (v.funcname ?? []).map((n: any) => n.String?.sval).at(-1) ?? '';
    if (!ALLOWED_FUNCTIONS.has(name) && !name.startsWith('wds_')) out.push(name);
  });
  return out;
}

/**
 * SQL the service produced (executed_sql, transformed_sql): exactly one statement, no function call the user could
 * not have made, and — when given — the hostile identifier survived as one identifier instead of becoming syntax.
 */
function checkProduced(label: string, produced: unknown, identifier?: string): string[] {
  if (typeof produced !== 'string') return [`${label}: no SQL text ${short(produced)}`];
  let tree: unknown;
  try {
    tree = parseOne(produced).tree;
  } catch (err) {
    return [`${label}: the produced SQL does not re-parse as one statement (${(err as Error).message}): ${short(produced, 800)}`];
  }
  const problems: string[] = [];
  const calls = foreignCalls(tree);
  if (calls.length) problems.push(`${label}: the produced SQL calls ${calls.join(', ')}: ${short(produced, 800)}`);
  if (identifier !== undefined && !stringLeaves(tree).has(identifier)) {
    problems.push(`${label}: identifier ${JSON.stringify(identifier)} did not survive as an identifier: ${short(produced, 800)}`);
  }
  return problems;
}

const OK_CODES = new Set(['UNSUPPORTED', 'PARSE_ERROR', 'INVALID_TABLE', 'SCHEMA_ACCESS_DENIED', 'POLICY_DENIED', 'DDL_FORBIDDEN', 'EXECUTION_ERROR']);

/** The outcome rules of finding 1 for one statement, through /sql and /sql/preview. */
async function injectionCase(token: string, sql: string, identifier?: string): Promise<string[]> {
  const run = await h.sql(token, A.id, sql);
  const preview = await h.call('POST', `/api/v1/workspaces/${A.id}/sql/preview`, { token, body: { sql } });
  const withPolicies = await h.call('POST', `/api/v1/workspaces/${A.id}/sql/preview`, { token, body: { sql, with_policies: true } });
  const problems = [...leaks('sql', sql, run), ...leaks('preview', sql, preview), ...leaks('preview+policies', sql, withPolicies), ...rowLeaks('sql', run)];
  if (withPolicies.status === 200 && typeof withPolicies.body.policy_sql === 'string') {
    problems.push(...checkProduced('policy_sql', withPolicies.body.policy_sql, identifier));
  }
  if (run.status === 200) problems.push(...checkProduced('executed_sql', run.body.executed_sql, identifier));
  else if (!OK_CODES.has(run.body?.code)) problems.push(`sql: unexpected answer ${run.status} ${short(run.body)}`);
  else if (run.body.code === 'EXECUTION_ERROR' && /syntax error|unterminated|zero-length/i.test(String(run.body.error))) {
    problems.push(`sql: the rewritten text no longer parses (the identifier became syntax): ${short(run.body)}`);
  }
  if (preview.status === 200) problems.push(...checkProduced('transformed_sql', preview.body.transformed_sql, identifier));
  return problems.map((p) => `${p}\n    for: ${sql.replace(/\n/g, '\\n')}`);
}

async function snapshot(token: string, wsId: string, statements: string[]): Promise<string> {
  const out: unknown[] = [];
  for (const sql of statements) out.push((await h.sqlOk(token, wsId, sql)).rows);
  return JSON.stringify(out);
}
const B_SNAPSHOT = [
  'SELECT * FROM secrets ORDER BY id',
  'SELECT * FROM notes ORDER BY id',
  'SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY table_name, column_name',
];
const HIDDEN_SNAPSHOT = ["SELECT id, owner_id, slug, title, n, req, span::text AS span, updated_at, deleted_at FROM t WHERE slug = 'hidden-6'"];

beforeAll(async () => {
  await loadParser();
  h = await Harness.create({ SQL_STATEMENT_TIMEOUT_MS: '60000', STF_TIMEOUT_MS: '30000' });

  ownerB = await h.user('victim');
  B = await h.workspace(ownerB.token, 'Victim');
  await h.sqlOk(ownerB.token, B.id, 'CREATE TABLE secrets (title text, body text)');
  await h.sqlOk(ownerB.token, B.id, 'CREATE TABLE notes (body text, n int)');
  await h.allowAll(ownerB.token, B.id, [ownerB.id], ['secrets', 'notes', 'future_t', 'future_u', 'future_v']);
  await h.sqlOk(ownerB.token, B.id, `INSERT INTO secrets (title, body) VALUES ('${B_CANARY}_title', 'the ${B_CANARY} body')`);
  await h.sqlOk(ownerB.token, B.id, `INSERT INTO notes (body, n) VALUES ('${B_CANARY}_note', 1)`);

  ownerA = await h.user('ownerA');
  A = await h.workspace(ownerA.token, 'Attacker');
  attacker = await h.user('attacker');
  colleague = await h.user('colleague');
  blind = await h.user('blind');
  for (const u of [attacker, colleague, blind]) await h.addMember(ownerA.token, A.id, u.email, 'member');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE notes (body text, n int)');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE items (k text UNIQUE, body text, n int)');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE castcols (a int, b text)');
  await h.sqlOk(
    ownerA.token,
    A.id,
    "CREATE TABLE t (owner_id uuid, slug text UNIQUE, title text, n int, req text NOT NULL DEFAULT 'r', span int4range, EXCLUDE USING gist (span WITH &&))",
  );
  await h.allowAll(ownerA.token, A.id, [ownerA.id], ['notes', 'items', 't', 'castcols', 'ident_ok']);
  await h.sqlOk(ownerA.token, A.id, "INSERT INTO notes (body, n) VALUES ('A note 1', 1), ('A note 2', 2)");
  await h.sqlOk(ownerA.token, A.id, "INSERT INTO items (k, body, n) VALUES ('k1', 'item 1', 1)");
  // The colleague's row first in the heap, so a scan meets it before the attacker's rows.
  await h.sqlOk(
    ownerA.token,
    A.id,
    `INSERT INTO t (owner_id, slug, title, n, span) VALUES ('${colleague.id}', 'hidden-6', '${A_HIDDEN}', 7, '${HIDDEN_SPAN}')`,
  );
  await h.sqlOk(
    ownerA.token,
    A.id,
    `INSERT INTO t (owner_id, slug, title, n, span) VALUES ('${attacker.id}', 'mine-1', '1', 1, '[1,2)'), ('${attacker.id}', 'mine-2', '2', 2, '[2,3)')`,
  );
  const g = await h.group(ownerA.token, A.id, { name: 'attacker', user_ids: [attacker.id] });
  for (const operation of ['select', 'insert', 'update', 'delete']) {
    for (const table_name of ['notes', 'items']) await h.policy(ownerA.token, A.id, { policy_group_id: g, table_name, operation });
  }
  await h.policy(ownerA.token, A.id, { policy_group_id: g, table_name: 't', operation: 'select', condition: { owner_id: '$user_id' } });
  for (const operation of ['insert', 'update', 'delete']) await h.policy(ownerA.token, A.id, { policy_group_id: g, table_name: 't', operation });
  const bg = await h.group(ownerA.token, A.id, { name: 'blind', user_ids: [blind.id] });
  for (const operation of ['insert', 'update', 'delete']) await h.policy(ownerA.token, A.id, { policy_group_id: bg, table_name: 't', operation });

  AP = `ws_${underscored(A.id)}_`;
  BP = `ws_${underscored(B.id)}_`;
  secretTokens = [
    ['a B canary', B_CANARY],
    ['the hidden canary', A_HIDDEN],
    ["B's workspace id", B.id],
    ["B's workspace id with underscores", underscored(B.id)],
    ["B's workspace id without dashes (B's role)", hex(B.id)],
    ["the hidden row's owner", colleague.id],
    ["B's owner", ownerB.id],
  ];
  snapshotB = await snapshot(ownerB.token, B.id, B_SNAPSHOT);
  snapshotHidden = await snapshot(ownerA.token, A.id, HIDDEN_SNAPSHOT);
  expect(snapshotB).toContain(B_CANARY);
  expect(snapshotHidden).toContain(A_HIDDEN);
}, 180_000);

afterAll(async () => {
  await h?.close();
});

/** Hidden SQL that, if it ever runs, switches to the superuser role and reads B's table. */
const hiddenFrom = () =>
  `CROSS JOIN LATERAL (SELECT set_config($$role$$, $$postgres$$, true) AS r) z CROSS JOIN LATERAL (SELECT query_to_xml($$SELECT * FROM user_data.${BP}secrets$$, true, false, $$$$)::text AS leak WHERE z.r IS NOT NULL) y`;
const leakExpr = () =>
  `(SELECT query_to_xml($$SELECT * FROM user_data.${BP}secrets$$, true, false, $$$$)::text FROM (SELECT set_config($$role$$, $$postgres$$, true) AS r) z WHERE z.r IS NOT NULL)`;

describe('finding 1: identifiers the deparser printed unquoted', () => {
  test('setup sanity: the attacker reads A, never B', async () => {
    const own = await h.sqlOk(attacker.token, A.id, 'SELECT slug FROM t ORDER BY slug');
    expect(own.rows).toEqual([{ slug: 'mine-1' }, { slug: 'mine-2' }]);
    const r = await h.sql(attacker.token, B.id, 'SELECT * FROM secrets');
    expect([r.status, r.body.code]).toEqual([403, 'FORBIDDEN']);
  });

  // Working exploits of the review: each runs hidden SQL (role switch + read of B) wherever the hole is open.
  const exploits: [string, () => string][] = [
    ['join USING (…) AS "j /*"', () => `SELECT * FROM notes n1 JOIN notes n2 USING (body) AS "j /*" WHERE 'x' <> '*/ ${hiddenFrom()} --'`],
    ['join alias (… JOIN …) AS "j /*"', () => `SELECT * FROM (notes n1 JOIN notes n2 USING (body)) AS "j /*" WHERE 'x' <> '*/ ${hiddenFrom()} --'`],
    ['join USING alias "j --" and a newline in a later literal', () => `SELECT * FROM notes n1 JOIN notes n2 USING (body) AS "j --" WHERE 'x' <> '\n${hiddenFrom()} --'`],
    ['join USING alias opening a dollar quote', () => `SELECT * FROM notes n1 JOIN notes n2 USING (body) AS "j JOIN (SELECT $$" WHERE 'x' <> '$$ AS s) s2 ON true ${hiddenFrom()} --'`],
    ['join USING alias opening a string literal', () => `SELECT * FROM notes n1 JOIN notes n2 USING (body) AS "j JOIN (SELECT '" WHERE ' AS s) s2 ON true ${hiddenFrom()} --' <> 'x'`],
    ['join USING alias with U& escapes for /*', () => `SELECT * FROM notes n1 JOIN notes n2 USING (body) AS U&"j \\002F\\002A" WHERE 'x' <> '*/ ${hiddenFrom()} --'`],
    ['CTE name "c /*"', () => `WITH "c /*" AS (SELECT '*/ AS (SELECT 1 AS one) SELECT * FROM c ${hiddenFrom()} --' AS v) SELECT v FROM "c /*"`],
    ['WINDOW name "w /*"', () => `SELECT count(*) OVER w AS c, 'a' AS leak FROM notes WINDOW "w /*" AS () ORDER BY '*/ AS () UNION ALL SELECT 0, ${leakExpr()} --'`],
    ['window reference OVER ("w /*" …)', () => `SELECT count(*) OVER ("w /*") AS c, 'a' AS leak FROM notes WINDOW w0 AS () ORDER BY '*/) AS c, ${leakExpr()} AS leak FROM (SELECT 1) q WINDOW w AS () --'`],
    [
      'ON CONFLICT ON CONSTRAINT "<pkey> /*"',
      () => `INSERT INTO items (k) VALUES ('e-conflict') ON CONFLICT ON CONSTRAINT "${AP}items_pkey /*" DO NOTHING RETURNING '*/ DO NOTHING RETURNING ${leakExpr()} AS leak --' AS x`,
    ],
    ['OPERATOR(schema.op) with a hostile schema', () => `SELECT 1 OPERATOR("pg_catalog.+) 2 AS v /*".+) 2 AS v, '*/, ${leakExpr()} AS leak --' AS w`],
    ['named argument "x /*" => …', () => `SELECT abs("1) AS v, 2 AS w /*" => '*/, ${leakExpr()} AS leak --') AS v`],
  ];
  for (const [name, sql] of exploits) {
    test(`exploit: ${name}`, async () => {
      expect(await injectionCase(attacker.token, sql())).toEqual([]);
    });
  }

  // Every listed position × hostile identifier: status < 500, nothing of B, and if the service answers with SQL it
  // must be one statement in which the identifier is still one identifier.
  const cores: [string, string][] = [
    // [identifier as written, its value]
    ['"j /*"', 'j /*'],
    ['"j */"', 'j */'],
    ['"j --"', 'j --'],
    [`"j '"`, "j '"],
    ['"j """', 'j "'],
    ['"j $$"', 'j $$'],
    ['"j $t$"', 'j $t$'],
    ['"j \\"', 'j \\'],
    ['"j \\\'"', "j \\'"],
    ['"j\n*/ --"', 'j\n*/ --'],
    ['"j ; SELECT 1"', 'j ; SELECT 1'],
    ['U&"j \\002F\\002A"', 'j /*'],
    ['U&"j \\0027"', "j '"],
    ['U&"j !002D!002D" UESCAPE \'!\'', 'j --'],
    ['U&"j \\+01F600 \\0024\\0024"', 'j \u{1F600} $$'],
  ];
  const tail = (value: string) => {
    const hidden = hiddenFrom();
    if (value.includes('--')) return `\n${hidden} --`;
    return `*/ ${hidden} --`;
  };
  let m = 0;
  const positions: [string, 'attacker' | 'admin', (I: string, T: string) => string][] = [
    ['join USING alias', 'attacker', (I, T) => `SELECT * FROM notes n1 JOIN notes n2 USING (body) AS ${I} WHERE 'x' <> '${T}'`],
    ['join alias', 'attacker', (I, T) => `SELECT * FROM (notes n1 JOIN notes n2 USING (body)) AS ${I} WHERE 'x' <> '${T}'`],
    ['CTE name', 'attacker', (I, T) => `WITH ${I} AS (SELECT '${T}' AS v) SELECT v FROM ${I}`],
    ['WINDOW name', 'attacker', (I, T) => `SELECT count(*) OVER ${I} AS c FROM notes WINDOW ${I} AS () ORDER BY length('${T}')`],
    ['window reference', 'attacker', (I, T) => `SELECT count(*) OVER (${I} ORDER BY n) AS c FROM notes WINDOW ${I} AS (PARTITION BY body) ORDER BY length('${T}')`],
    ['ON CONFLICT ON CONSTRAINT', 'attacker', (I, T) => `INSERT INTO items (k) VALUES ('m-${++m}') ON CONFLICT ON CONSTRAINT ${I} DO NOTHING RETURNING length('${T}') AS x`],
    ['OPERATOR(schema.op)', 'attacker', (I, T) => `SELECT 1 OPERATOR(${I}.+) 2 AS v, length('${T}') AS w`],
    ['ORDER BY … USING OPERATOR(schema.op)', 'attacker', (I, T) => `SELECT body FROM notes ORDER BY body USING OPERATOR(${I}.<) LIMIT length('${T}')`],
    ['named argument', 'attacker', (I, T) => `SELECT make_interval(${I} => 1) AS v, length('${T}') AS w`],
    ['column alias', 'attacker', (I, T) => `SELECT body AS ${I}, length('${T}') AS w FROM notes`],
    ['table alias', 'attacker', (I, T) => `SELECT ${I}.body, length('${T}') AS w FROM notes AS ${I}`],
    ['column alias list', 'attacker', (I, T) => `SELECT * FROM notes AS x (${I}, b2) WHERE length('${T}') > 0`],
    ['CTE column list', 'attacker', (I, T) => `WITH c (${I}) AS (SELECT 1) SELECT * FROM c WHERE length('${T}') > 0`],
    ['quoted column name', 'attacker', (I, T) => `SELECT ${I} FROM notes WHERE length('${T}') > 0`],
    ['UPDATE SET column', 'attacker', (I, T) => `UPDATE notes SET ${I} = 1 WHERE body = '${T}'`],
    ['index access method (admin)', 'admin', (I, T) => `CREATE INDEX mx_${++m} ON castcols USING ${I} (b) WHERE b <> '${T}'`],
  ];
  for (const [position, who, template] of positions) {
    test(`matrix: ${position} × ${cores.length} hostile identifiers`, async () => {
      const token = who === 'admin' ? ownerA.token : attacker.token;
      const problems: string[] = [];
      for (const [written, value] of cores) {
        const sql = template(written, tail(value).replaceAll("'", "''"));
        problems.push(...(await injectionCase(token, sql, value)));
      }
      expect(problems).toEqual([]);
    }, 60_000);
  }

  test('afterwards: no role switch left behind, B still unreadable and unchanged', async () => {
    for (const sql of [`SELECT * FROM user_data.${BP}secrets`, `SELECT * FROM ${BP}secrets`, `TABLE user_data.${BP}notes`]) {
      const r = await h.sql(attacker.token, A.id, sql);
      expect(r.status, sql).toBe(400);
      expect(JSON.stringify(r.body)).not.toContain(B_CANARY);
    }
    const own = await h.sqlOk(attacker.token, A.id, 'SELECT body FROM notes ORDER BY body');
    expect(own.rows).toEqual([{ body: 'A note 1' }, { body: 'A note 2' }]);
    expect(await snapshot(ownerB.token, B.id, B_SNAPSHOT)).toBe(snapshotB);
  });
});

describe('finding 2: string-valued options are refused, integer options still work', () => {
  const refused = [
    "CREATE TABLE o1 (x int) WITH (fillfactor = '70')",
    "CREATE TABLE o2 (x int OPTIONS (a 'v'))",
    "CREATE TABLE o3 (x int OPTIONS (a 'it''s'))",
    "CREATE TABLE o4 (x int, CONSTRAINT o4_u UNIQUE (x) WITH (fillfactor = '70'))",
    "CREATE TABLE o5 (x int OPTIONS (a 'v''), y int DEFAULT (query_to_xml($$select 1$$, true, false, $$$$)::text::int), z int OPTIONS (b ''v'))",
    "CREATE TABLE o6 (x int) WITH (fillfactor = '70) TABLESPACE pg_global --')",
    "CREATE INDEX o_idx1 ON castcols (b) WITH (fillfactor = '70')",
    "CREATE INDEX o_idx2 ON castcols (b text_pattern_ops (siglen = '1'))",
    "CREATE INDEX o_idx3 ON castcols (b) WITH (fillfactor = '70'' ) WHERE (true')",
    "ALTER TABLE castcols ADD COLUMN o int OPTIONS (a 'v')",
    "ALTER TABLE castcols ADD CONSTRAINT o_u UNIQUE (a) WITH (fillfactor = '70')",
    "ALTER TABLE castcols SET (fillfactor = '70')",
  ];
  for (const sql of refused) {
    test(`admin: ${sql.slice(0, 100)} → 400 UNSUPPORTED`, async () => {
      const r = await h.sql(ownerA.token, A.id, sql);
      expect([r.status, r.body?.code], short(r.body)).toEqual([400, 'UNSUPPORTED']);
      const p = await h.call('POST', `/api/v1/workspaces/${A.id}/sql/preview`, { token: ownerA.token, body: { sql } });
      expect([p.status, p.body?.code], short(p.body)).toEqual([400, 'UNSUPPORTED']);
    });
  }

  test('WITH (fillfactor = 70) as an integer still works for an admin, and nothing refused was created', async () => {
    await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE o_ok (x int) WITH (fillfactor = 70)');
    await h.sqlOk(ownerA.token, A.id, 'CREATE INDEX o_ok_idx ON o_ok (x) WITH (fillfactor = 70)');
    const tables = await h.sqlOk(ownerA.token, A.id, "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'o%' ORDER BY 1");
    expect(tables.rows).toEqual([{ table_name: 'o_ok' }]);
    const cols = await h.sqlOk(ownerA.token, A.id, "SELECT column_name FROM information_schema.columns WHERE table_name = 'castcols' ORDER BY ordinal_position");
    expect(cols.rows.map((r: any) => r.column_name)).not.toContain('o');
    await h.sqlOk(ownerA.token, A.id, 'DROP TABLE o_ok');
  });
});

describe('finding 3: role changes are refused through the endpoint', () => {
  const statements = [
    "SELECT set_config('role', 'postgres', true)",
    "SELECT set_config('role', 'postgres', false)",
    "SELECT pg_catalog.set_config('session_authorization', 'postgres', true)",
    'SET ROLE postgres',
    'SET LOCAL ROLE postgres',
    'RESET ROLE',
    'SET SESSION AUTHORIZATION postgres',
    'RESET SESSION AUTHORIZATION',
  ];
  for (const sql of statements) {
    test(`${sql} → 4xx for the attacker and the admin`, async () => {
      for (const token of [attacker.token, ownerA.token]) {
        const r = await h.sql(token, A.id, sql);
        expect(r.status, short(r.body)).toBeGreaterThanOrEqual(400);
        expect(r.status, short(r.body)).toBeLessThan(500);
      }
    });
  }

  test('and through STF sql()', async () => {
    const code = `const out = []; for (const q of ${JSON.stringify(statements)}) { try { sql(q); out.push('ran: ' + q); } catch (e) { out.push('refused'); } } return out;`;
    const r = await instantRun(ownerA.token, A.id, code);
    expect(r.status).toBe(200);
    expect(r.body.output).toEqual(statements.map(() => 'refused'));
  });
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
async function instantRun(token: string, wsId: string, code: string, input?: unknown): Promise<Res> {
  const s = await h.call('POST', '/api/v1/stfs', { token, workspace: wsId, body: { name: `s${Date.now()}`, version: '1', runtime: 'javascript', code: b64(code) } });
  if (s.status !== 201) throw new Error(`stf create: ${s.status} ${short(s.body)}`);
  return h.call('POST', '/api/v1/stfs/instant-run', { token, workspace: wsId, body: { stf_id: s.body.id, ...(input === undefined ? {} : { input }) } });
}

describe('finding 6: write rights never reveal rows hidden from select', () => {
  const fill = (sql: string) => sql.replaceAll('{ME}', attacker.id);
  const noCanary = (r: Res, sql: string) => {
    const text = JSON.stringify(r.body);
    expect(r.status, short(r.body)).toBeLessThan(500);
    expect(text, sql).not.toContain(A_HIDDEN);
    expect(text, sql).not.toContain('4242');
    expect(text, sql).not.toContain('4343');
    expect(text, sql).not.toContain(colleague.id);
  };

  test('UPDATE … WHERE title::int = 1: only the own row, never a cast error on the hidden title', async () => {
    const sql = 'UPDATE t SET n = n WHERE title::int = 1';
    const r = await h.sql(attacker.token, A.id, sql);
    noCanary(r, sql);
    expect([r.status, r.body.affected_rows], short(r.body)).toEqual([200, 1]);
  });

  test('UPDATE t SET n = title::int: evaluated on own rows only', async () => {
    const sql = 'UPDATE t SET n = title::int';
    const r = await h.sql(attacker.token, A.id, sql);
    noCanary(r, sql);
    expect([r.status, r.body.affected_rows], short(r.body)).toEqual([200, 2]);
  });

  test('UPDATE … RETURNING title::int: own rows only', async () => {
    const sql = 'UPDATE t SET n = n RETURNING title::int AS v';
    const r = await h.sql(attacker.token, A.id, sql);
    noCanary(r, sql);
    expect(r.status, short(r.body)).toBe(200);
    expect(r.body.rows.map((x: any) => x.v).sort()).toEqual([1, 2]);
    expect(r.body.affected_rows).toBe(2);
  });

  test('UPDATE t SET n = n counts only rows the attacker may select', async () => {
    const all = await h.sql(attacker.token, A.id, 'UPDATE t SET n = n');
    expect([all.status, all.body.affected_rows], short(all.body)).toEqual([200, 2]);
    const named = await h.sql(attacker.token, A.id, "UPDATE t SET n = n WHERE slug IN ('hidden-6', 'mine-1')");
    expect([named.status, named.body.affected_rows], short(named.body)).toEqual([200, 1]);
    const hidden = await h.sql(attacker.token, A.id, "UPDATE t SET n = 0 WHERE slug = 'hidden-6'");
    expect([hidden.status, hidden.body.affected_rows], short(hidden.body)).toEqual([200, 0]);
  });

  test('upsert whose conflicting row is hidden: never updated, its values never returned', async () => {
    const sql = fill("INSERT INTO t (owner_id, slug, title) VALUES ('{ME}', 'hidden-6', 'x') ON CONFLICT (slug) DO UPDATE SET n = excluded.n RETURNING title::int AS v");
    const r = await h.sql(attacker.token, A.id, sql);
    noCanary(r, sql);
    expect([200, 400, 403], short(r.body)).toContain(r.status);
    if (r.status === 200) expect([r.body.rows, r.body.affected_rows]).toEqual([[], 0]);
    const plain = fill("INSERT INTO t (owner_id, slug, title) VALUES ('{ME}', 'hidden-6', 'x') ON CONFLICT (slug) DO UPDATE SET n = 0");
    const p = await h.sql(attacker.token, A.id, plain);
    noCanary(p, plain);
    if (p.status === 200) expect(p.body.affected_rows).toBe(0);
  });

  test('NOT NULL violations never print "Failing row contains"', async () => {
    for (const sql of [
      fill("INSERT INTO t (owner_id, slug, title, req) VALUES ('{ME}', 'nn-1', 'x', NULL)"),
      'UPDATE t SET req = NULL',
      "UPDATE t SET req = NULL WHERE slug = 'hidden-6' OR title = '1'",
    ]) {
      const r = await h.sql(attacker.token, A.id, sql);
      noCanary(r, sql);
      expect([r.status, r.body.code], sql).toEqual([400, 'EXECUTION_ERROR']);
      expect(JSON.stringify(r.body), sql).not.toMatch(/Failing row contains/i);
    }
    const r = await h.sql(attacker.token, A.id, "UPDATE t SET req = NULL WHERE slug = 'hidden-6'");
    expect([r.status, r.body.affected_rows], short(r.body)).toEqual([200, 0]);
  });

  test('unique and exclusion violations against the hidden row show no key DETAIL', async () => {
    for (const sql of [
      fill(`INSERT INTO t (owner_id, slug, title, span) VALUES ('{ME}', 'ex-1', 'x', '[4300,4301)')`),
      "UPDATE t SET span = '[4300,4301)' WHERE slug = 'mine-1'",
      fill("INSERT INTO t (owner_id, slug, title) VALUES ('{ME}', 'hidden-6', 'x')"),
      "UPDATE t SET slug = 'hidden-6' WHERE slug = 'mine-1'",
    ]) {
      const r = await h.sql(attacker.token, A.id, sql);
      noCanary(r, sql);
      expect([r.status, r.body.code], sql).toEqual([400, 'EXECUTION_ERROR']);
      expect(JSON.stringify(r.body), sql).not.toMatch(/Key \(/);
    }
  });

  test('DELETE … WHERE title::int = 99 never evaluates the hidden row', async () => {
    for (const sql of ['DELETE FROM t WHERE title::int = 99', 'DELETE FROM t WHERE title::int = 99 RETURNING slug', "DELETE FROM t WHERE slug = 'hidden-6'"]) {
      const r = await h.sql(attacker.token, A.id, sql);
      noCanary(r, sql);
      expect([r.status, r.body.affected_rows], `${sql}: ${short(r.body)}`).toEqual([200, 0]);
    }
  });

  test('a writer without any select policy: denied or no row touched, never a value', async () => {
    for (const sql of [
      'UPDATE t SET n = n WHERE title::int = 1',
      'UPDATE t SET n = title::int',
      'UPDATE t SET n = n',
      'DELETE FROM t WHERE title::int = 1',
      "INSERT INTO t (owner_id, slug, title, span) VALUES (NULL, 'bl-1', 'x', '[4300,4301)')",
    ]) {
      const r = await h.sql(blind.token, A.id, sql);
      noCanary(r, sql);
      expect(JSON.stringify(r.body), sql).not.toMatch(/Key \(|Failing row/);
      if (r.status === 200) expect(r.body.affected_rows, sql).toBe(0);
      else if (sql.startsWith('INSERT')) expect([r.status, r.body.code], sql).toEqual([400, 'EXECUTION_ERROR']);
      else expect([r.status, r.body.code], sql).toEqual([403, 'POLICY_DENIED']);
    }
  });

  test('the hidden row is unchanged, seen as its owner', async () => {
    expect(await snapshot(ownerA.token, A.id, HIDDEN_SNAPSHOT)).toBe(snapshotHidden);
  });
});

describe('finding 7: catalog types through their array types', () => {
  const selects = () => [
    "SELECT '{1259}'::_regclass AS v",
    "SELECT '{10}'::_regrole AS v",
    "SELECT '{1,2}'::_oid AS v",
    "SELECT '{}'::_aclitem AS v",
    "SELECT '{}'::_regnamespace AS v",
    "SELECT '{}'::_regproc AS v",
    "SELECT '{}'::_xid AS v",
    `SELECT '{}'::"_${BP}secrets" AS v`,
    `SELECT '{}'::_${BP}secrets AS v`,
    "SELECT 'x'::regclass[] AS v",
    "SELECT CAST('{}' AS pg_catalog._oid) AS v",
    "SELECT '{1259}'::pg_catalog._regclass AS v",
    `SELECT '{user_data.${BP}secrets}'::_regclass::_oid AS v`,
    "SELECT ARRAY['pg_class']::_regclass AS v",
    "SELECT ('{1259}'::_regclass)[1] AS v",
  ];
  test('SELECT casts → 400 UNSUPPORTED or SCHEMA_ACCESS_DENIED, never ids or names', async () => {
    const problems: string[] = [];
    for (const sql of selects()) {
      for (const token of [attacker.token, ownerA.token]) {
        const r = await h.sql(token, A.id, sql);
        problems.push(...leaks('sql', sql, r));
        if (r.status !== 400 || !['UNSUPPORTED', 'SCHEMA_ACCESS_DENIED'].includes(r.body?.code)) problems.push(`${sql}: ${r.status} ${short(r.body)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test('column definitions of those types → 400, nothing created', async () => {
    const ddl = [
      'CREATE TABLE c1 (a _regclass)',
      'CREATE TABLE c2 (a regclass[])',
      'CREATE TABLE c3 (a pg_catalog._oid)',
      'CREATE TABLE c4 (a _aclitem)',
      `CREATE TABLE c5 (a "_${BP}secrets")`,
      'ALTER TABLE castcols ADD COLUMN r _regrole',
      'ALTER TABLE castcols ADD COLUMN r2 _oid[]',
      "ALTER TABLE castcols ALTER COLUMN b TYPE _aclitem USING '{}'",
      'ALTER TABLE castcols ALTER COLUMN a TYPE _oid USING ARRAY[a]::_oid',
    ];
    const problems: string[] = [];
    for (const sql of ddl) {
      const r = await h.sql(ownerA.token, A.id, sql);
      problems.push(...leaks('sql', sql, r));
      if (r.status !== 400 || !['UNSUPPORTED', 'SCHEMA_ACCESS_DENIED'].includes(r.body?.code)) problems.push(`${sql}: ${r.status} ${short(r.body)}`);
    }
    expect(problems).toEqual([]);
    const tables = await h.sqlOk(ownerA.token, A.id, "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'c_' ORDER BY 1");
    expect(tables.rows).toEqual([]);
    const cols = await h.sqlOk(ownerA.token, A.id, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'castcols' AND column_name IN ('a', 'b', 'r', 'r2') ORDER BY 1");
    expect(cols.rows).toEqual([
      { column_name: 'a', data_type: 'integer' },
      { column_name: 'b', data_type: 'text' },
    ]);
  });
});

describe("finding 8: names in another workspace's namespace", () => {
  test('IDENTITY (SEQUENCE NAME …) outside the own namespace → 400 UNSUPPORTED; B can still create its tables', async () => {
    const statements = [
      `CREATE TABLE s1 (x int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME ${BP}future_t))`,
      `CREATE TABLE s2 (x int GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME "${BP}future_u"))`,
      'CREATE TABLE s3 (x int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME user_data.squat_x))',
      'CREATE TABLE s4 (x int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME public.squat_y))',
      `CREATE TABLE s5 (x int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME user_data."${BP}future_v"))`,
      `ALTER TABLE castcols ADD COLUMN q int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME ${BP}future_v)`,
    ];
    const problems: string[] = [];
    for (const sql of statements) {
      const r = await h.sql(ownerA.token, A.id, sql);
      if (r.status !== 400 || r.body?.code !== 'UNSUPPORTED') problems.push(`${sql}: ${r.status} ${short(r.body)}`);
    }
    for (const table of ['future_t', 'future_u', 'future_v']) {
      const r = await h.sql(ownerB.token, B.id, `CREATE TABLE ${table} (a int)`);
      if (r.status !== 200) problems.push(`B cannot create ${table}: ${r.status} ${short(r.body)}`);
      else await h.sqlOk(ownerB.token, B.id, `INSERT INTO ${table} (a) VALUES (1)`);
    }
    expect(problems).toEqual([]);
  });

  test('a plain identity column still works', async () => {
    await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE ident_ok (x int GENERATED ALWAYS AS IDENTITY, label text)');
    await h.sqlOk(ownerA.token, A.id, "INSERT INTO ident_ok (label) VALUES ('a'), ('b')");
    const r = await h.sqlOk(ownerA.token, A.id, 'SELECT x, label FROM ident_ok ORDER BY x');
    expect(r.rows).toEqual([
      { x: 1, label: 'a' },
      { x: 2, label: 'b' },
    ]);
  });
});

describe('finding 9: no 5xx from the rewriter on big or deep statements', () => {
  test('150 000 items in an IN list → 200 (or 4xx), never 5xx', async () => {
    const sql = `SELECT 1 AS one WHERE 1 IN (${Array(150_000).fill('1').join(',')})`;
    const r = await h.sql(attacker.token, A.id, sql);
    expect(r.status, short(r.body)).toBeLessThan(500);
    if (r.status === 200) expect(r.body.rows).toEqual([{ one: 1 }]);
  });

  test('VALUES with 130 000 rows → 200 with the right count (or 4xx), never 5xx', async () => {
    const sql = `SELECT count(*) AS c FROM (VALUES ${Array(130_000).fill('(1)').join(',')}) v(x)`;
    const r = await h.sql(attacker.token, A.id, sql);
    expect(r.status, short(r.body)).toBeLessThan(500);
    if (r.status === 200) expect(r.body.rows).toEqual([{ c: 130_000 }]);
  });

  test('long operator chains and lists → never 5xx', async () => {
    const statements = [
      `SELECT ${Array(100_000).fill('1').join('+')} AS v`,
      `SELECT ${Array(60_000).fill("'a'").join(' || ')} AS v`,
      `SELECT 1 AS v WHERE ${Array(60_000).fill('1 = 1').join(' AND ')}`,
      `SELECT 1 AS v WHERE ${Array(60_000).fill('1 = 0').join(' OR ')}`,
      `SELECT body FROM notes WHERE body IN (${Array(60_000).fill("'x'").join(',')})`,
      `SELECT ARRAY[${Array(100_000).fill('1').join(',')}] AS v`,
    ];
    for (const sql of statements) {
      const r = await h.sql(attacker.token, A.id, sql);
      expect(r.status, `${sql.slice(0, 60)}: ${short(r.body)}`).toBeLessThan(500);
    }
  }, 180_000); // six statements of up to 700 kB each, parsed and rewritten: CPU-bound, beside other packages' tests

  test('deep nesting, 10 000 levels → 4xx', async () => {
    const statements = [
      `SELECT ${'('.repeat(10_000)}1${')'.repeat(10_000)} AS v`,
      `SELECT ${'-'.repeat(10_000)}1 AS v`.replace(/--/g, '- -'),
      `SELECT ${'NOT '.repeat(10_000)}true AS v`,
      `SELECT ${'ARRAY['.repeat(10_000)}1${']'.repeat(10_000)} AS v`,
      `SELECT ${'(SELECT '.repeat(10_000)}1${')'.repeat(10_000)} AS v`,
      `SELECT ${'coalesce('.repeat(10_000)}1${')'.repeat(10_000)} AS v`,
      `SELECT * FROM ${'(SELECT * FROM '.repeat(3_000)}notes${') s'.repeat(3_000)}`,
    ];
    for (const sql of statements) {
      const r = await h.sql(attacker.token, A.id, sql);
      expect(r.status, `${sql.slice(0, 60)}: ${short(r.body)}`).toBeGreaterThanOrEqual(400);
      expect(r.status, `${sql.slice(0, 60)}: ${short(r.body)}`).toBeLessThan(500);
    }
    expect((await h.sqlOk(attacker.token, A.id, 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  }, 60_000);
});

describe('finding 5: oversized statements fail cleanly', () => {
  const BIG = 'SELECT 1 AS one WHERE 1 IN (';
  // The error names the statement's length (not a timeout, not an internal stack overflow).
  const lengthy = /length|too long|longer than [0-9 ,.]*(bytes|characters|MiB|KiB)|size|bytes|too large|MiB|characters/i;
  const notLength = /call stack|ran longer than [0-9 ,.]*ms|timeout|timed out/i;

  test('STF sql() with a 5 MB statement built in the code: a clean failure inside the run', async () => {
    const code = `const q = ${JSON.stringify(BIG)} + '1,'.repeat(2500000) + '1)'; return sql(q);`;
    const r = await instantRun(ownerA.token, A.id, code);
    expect(r.status, short(r.body)).toBe(200);
    expect(r.body.success, short(r.body)).toBe(false);
    expect(r.body.error.kind, short(r.body)).not.toBe('timeout');
    expect(r.body.error.message, short(r.body)).toMatch(lengthy);
    expect(r.body.error.message, short(r.body)).not.toMatch(notLength);
  }, 120_000);

  test('STF sql() with a 5 MB statement passed as input, caught by the code', async () => {
    const q = `${BIG}${'1,'.repeat(2_500_000)}1)`;
    const r = await instantRun(ownerA.token, A.id, 'try { sql($input.q); return "ran"; } catch (e) { return "refused: " + e.message; }', { q });
    expect(r.status, short(r.body)).toBe(200);
    const message = r.body.success ? String(r.body.output) : String(r.body.error?.message);
    expect(message, short(r.body)).not.toBe('ran');
    expect(message, short(r.body)).toMatch(lengthy);
    expect(message, short(r.body)).not.toMatch(notLength);
  }, 120_000);

  test('afterwards ordinary SQL works in the same and in another workspace, from /sql and from STFs', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await h.sqlOk(ownerA.token, A.id, `SELECT ${i} AS v`)).rows).toEqual([{ v: i }]);
      expect((await h.sqlOk(ownerB.token, B.id, 'SELECT count(*) AS c FROM secrets')).rows).toEqual([{ c: 1 }]);
      expect((await h.sqlOk(attacker.token, A.id, "SELECT body FROM notes WHERE body = 'A note 1'")).rows).toEqual([{ body: 'A note 1' }]);
    }
    const r = await instantRun(ownerA.token, A.id, 'return sql("SELECT count(*) AS c FROM notes")');
    expect(r.body, short(r.body)).toMatchObject({ success: true, output: [{ c: 2 }] });
  });

  test('/sql with more than 1 MiB of SQL → 4xx', async () => {
    const sql = `${BIG}${'1,'.repeat(530_000)}1)`;
    expect(Buffer.byteLength(sql)).toBeGreaterThan(1024 * 1024);
    const r = await h.sql(ownerA.token, A.id, sql);
    expect(r.status, short(r.body)).toBeGreaterThanOrEqual(400);
    expect(r.status, short(r.body)).toBeLessThan(500);
    const multibyte = `SELECT '${'é'.repeat(600_000)}' AS v`;
    expect(Buffer.byteLength(multibyte)).toBeGreaterThan(1024 * 1024);
    const m = await h.sql(ownerA.token, A.id, multibyte);
    expect(m.status, short(m.body)).toBeGreaterThanOrEqual(400);
    expect(m.status, short(m.body)).toBeLessThan(500);
  });
});

describe('finding 4: a single value never crashes the process', () => {
  test("SELECT format('%600000000s','x') → 400 EXECUTION_ERROR about bytes; the service keeps answering", async () => {
    const r = await h.sql(attacker.token, A.id, "SELECT format('%600000000s','x') AS v");
    expect([r.status, r.body?.code], short(r.body)).toEqual([400, 'EXECUTION_ERROR']);
    expect(String(r.body.error), short(r.body)).toMatch(/bytes|size|large/i);
    expect((await h.sqlOk(attacker.token, A.id, 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect((await h.sqlOk(ownerB.token, B.id, 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  }, 120_000);

  describe('with SQL_MAX_ROW_BYTES = 1 MiB and SQL_MAX_RESPONSE_BYTES = 4 MiB', () => {
    let hl: Harness;
    let o: User;
    let w: { id: string };
    let other: { id: string };
    beforeAll(async () => {
      hl = await Harness.create({ SQL_MAX_ROW_BYTES: '1048576', SQL_MAX_RESPONSE_BYTES: '4194304', SQL_STATEMENT_TIMEOUT_MS: '20000' });
      o = await hl.user('limits');
      w = await hl.workspace(o.token, 'limits');
      other = await hl.workspace(o.token, 'other');
    }, 120_000);
    afterAll(async () => {
      await hl?.close();
    });
    const bytes = /bytes|size|large/i;

    test('one 2 MB value → 400 EXECUTION_ERROR', async () => {
      const r = await hl.sql(o.token, w.id, "SELECT format('%2000000s', 'x') AS v");
      expect([r.status, r.body?.code], short(r.body)).toEqual([400, 'EXECUTION_ERROR']);
      expect(String(r.body.error)).toMatch(bytes);
      // repeat() is not on the function allow-list: refused or over the limit, a 400 either way.
      const rep = await hl.sql(o.token, w.id, "SELECT repeat('x', 2000000) AS v");
      expect(rep.status, short(rep.body)).toBe(400);
      expect(['EXECUTION_ERROR', 'UNSUPPORTED']).toContain(rep.body.code);
    });

    test('10 rows of 600 kB → 400 EXECUTION_ERROR (response limit)', async () => {
      const r = await hl.sql(o.token, w.id, "SELECT format('%600000s', g::text) AS v FROM generate_series(1, 10) g");
      expect([r.status, r.body?.code], short(r.body)).toEqual([400, 'EXECUTION_ERROR']);
      expect(String(r.body.error)).toMatch(bytes);
    });

    test('a result just under both limits → 200', async () => {
      const r = await hl.sql(o.token, w.id, "SELECT format('%600000s', g::text) AS v FROM generate_series(1, 6) g");
      expect(r.status, short(r.body)).toBe(200);
      expect(r.body.rows).toHaveLength(6);
      expect(r.body.rows.every((x: any) => x.v.length === 600_000)).toBe(true);
      const one = await hl.sql(o.token, w.id, "SELECT format('%1000000s', 'x') AS v");
      expect(one.status, short(one.body)).toBe(200);
      expect(one.body.rows[0].v).toHaveLength(1_000_000);
    });

    test('a huge error message is no crash either, and both workspaces keep working', async () => {
      const r = await hl.sql(o.token, w.id, "SELECT (format('%3000000s', 'x') || 'y')::int AS v");
      expect(r.status, short(r.body)).toBe(400);
      expect(JSON.stringify(r.body).length).toBeLessThan(4 * 1024 * 1024);
      expect((await hl.sqlOk(o.token, w.id, 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect((await hl.sqlOk(o.token, other.id, 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    });
  });
});

describe('finding 10: fair sharing of connections between workspaces', () => {
  let hf: Harness;
  let o: User;
  let o2: User;
  let wa: { id: string };
  let wb: { id: string };
  let admin: pg.Client;
  const MARK = 424242;
  // The mark is a name: a repeated statement runs as its template's prepared statement, whose text has no constants.
  const SLOW = `SELECT count(*) AS c${MARK} FROM generate_series(1, 10000000000) g WHERE g <> -1`;
  const running = async () =>
    (
      await admin.query(
        // A cursor's statement shows as its FETCH; nothing else of this database is active during the test.
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND (query LIKE $1 OR query LIKE 'FETCH%')",
        [`%${MARK}%`],
      )
    ).rows.map((r) => r.pid as number);

  beforeAll(async () => {
    hf = await Harness.create({ SQL_WORKSPACE_CONNECTIONS: '2', SQL_WORKSPACE_QUEUE: '1', SQL_STATEMENT_TIMEOUT_MS: '60000' });
    o = await hf.user('fair');
    // Another user's workspace: one user's workspaces share one fair share (issue 28, finding 9).
    o2 = await hf.user('fair2');
    wa = await hf.workspace(o.token, 'busy');
    wb = await hf.workspace(o2.token, 'quiet');
    admin = new pg.Client({ connectionString: hf.url });
    await admin.connect();
  }, 120_000);
  afterAll(async () => {
    if (admin) await admin.query('SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid = ANY($1)', [await running().catch(() => [])]).catch(() => {});
    await admin?.end().catch(() => {});
    await hf?.close();
  });

  test("B's SELECT 1 runs while A holds both its connections; A's statement beyond the queue → 429 at once", async () => {
    const track = (p: Promise<Res>) => {
      const t = { settled: false, res: undefined as Res | undefined, p };
      p.then((r) => {
        t.settled = true;
        t.res = r;
      });
      return t;
    };
    const a1 = track(hf.sql(o.token, wa.id, SLOW));
    const a2 = track(hf.sql(o.token, wa.id, SLOW));
    await until(async () => ((await running()).length >= 2 ? true : undefined), 20_000);
    expect([a1.settled, a2.settled]).toEqual([false, false]);

    const b = await hf.sql(o2.token, wb.id, 'SELECT 1 AS one');
    expect([b.status, b.body.rows], short(b.body)).toEqual([200, [{ one: 1 }]]);
    expect([a1.settled, a2.settled], 'A still running when B finished').toEqual([false, false]);

    // Two running and a queue of one: of three more statements, one waits and two are refused at once.
    const extra = [0, 1, 2].map(() => track(hf.sql(o.token, wa.id, 'SELECT 1 AS one')));
    await until(async () => (extra.filter((x) => x.settled).length >= 2 ? true : undefined), 20_000);
    const refused = extra.filter((x) => x.settled);
    expect(refused.map((x) => [x.res?.status, x.res?.body?.code])).toEqual([
      [429, 'TOO_MANY_REQUESTS'],
      [429, 'TOO_MANY_REQUESTS'],
    ]);
    expect([a1.settled, a2.settled], 'A still running when the 429s came').toEqual([false, false]);
    const queued = extra.find((x) => !x.settled);
    expect(queued, 'one statement waits in the queue').toBeDefined();

    // Cancel A's slow statements; the queued one then runs.
    await admin.query('SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid = ANY($1)', [await running()]);
    const [r1, r2] = await Promise.all([a1.p, a2.p]);
    expect([r1.status, r2.status]).toEqual([400, 400]);
    const q = await queued!.p;
    expect([q.status, q.body.rows], short(q.body)).toEqual([200, [{ one: 1 }]]);
    expect((await hf.sqlOk(o.token, wa.id, 'SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
  }, 90_000);
});

describe('after everything', () => {
  test("B's data and schema are unchanged (apart from the tables B created itself)", async () => {
    const r = await h.sqlOk(ownerB.token, B.id, 'SELECT * FROM secrets ORDER BY id');
    expect(JSON.stringify(r.rows)).toBe(JSON.stringify(JSON.parse(snapshotB)[0]));
    const n = await h.sqlOk(ownerB.token, B.id, 'SELECT * FROM notes ORDER BY id');
    expect(JSON.stringify(n.rows)).toBe(JSON.stringify(JSON.parse(snapshotB)[1]));
  });

  test("A's hidden row is unchanged", async () => {
    expect(await snapshot(ownerA.token, A.id, HIDDEN_SNAPSHOT)).toBe(snapshotHidden);
  });
});
