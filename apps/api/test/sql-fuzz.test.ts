import { ALLOWED_FUNCTIONS, loadParser, parseOne } from '@wds/sql-rewriter';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Harness, type Res, short, underscored } from './support.js';

/**
 * Property-based fuzzing of POST /sql and /sql/preview (issue 13).
 *
 * Statements come from a small grammar over the attacker's own tables — SELECT with joins (also `USING … AS`),
 * CTEs, windows, subqueries, set operations; INSERT/UPDATE/DELETE with RETURNING and ON CONFLICT; casts to random
 * type names (catalog ones too); function calls (forbidden ones too); OPERATOR(schema.op) and named arguments —
 * where every identifier and string literal slot is filled from a hostile arbitrary: quotes, comment openers, `$$`,
 * dollar tags, backslashes, NUL, unicode, lone surrogates, very long names, B's physical names, pg_catalog, platform.
 *
 * Invariants, as the attacker (a plain member of A): never a 5xx; no B canary and no hidden row of A in any answer;
 * SQL the service returns (executed_sql, transformed_sql, policy_sql) is exactly one statement whose every table
 * reference is one of A's physical tables in user_data, a CTE in scope, or the scoped information_schema subquery;
 * it calls no function outside the allow-list; an alias the user gave is still one identifier. B is unchanged after.
 */

const B_CANARY = 'B_CANARY_f00d';
const A_HIDDEN = 'A_HIDDEN_CANARY_fz';
const RUNS = 300;

type User = Awaited<ReturnType<Harness['user']>>;
let h: Harness;
let attacker: User;
let ownerA: User;
let ownerB: User;
let A: { id: string };
let B: { id: string };
let AP: string;
let BP: string;
let snapshotB: string;
let snapshotHidden: string;


async function snapshot(token: string, wsId: string, statements: string[]): Promise<string> {
  const out: unknown[] = [];
  for (const sql of statements) out.push((await h.sqlOk(token, wsId, sql)).rows);
  return JSON.stringify(out);
}
const B_SNAPSHOT = ['SELECT * FROM secrets ORDER BY id', 'SELECT * FROM notes ORDER BY id', 'SELECT table_name, column_name FROM information_schema.columns ORDER BY 1, 2'];
const HIDDEN_SNAPSHOT = ["SELECT * FROM docs WHERE slug = 'hidden-1'"];

beforeAll(async () => {
  await loadParser();
  h = await Harness.create();
  ownerB = await h.user('victim');
  B = await h.workspace(ownerB.token, 'Victim');
  await h.sqlOk(ownerB.token, B.id, 'CREATE TABLE secrets (title text, body text, n int)');
  await h.sqlOk(ownerB.token, B.id, 'CREATE TABLE notes (body text, n int)');
  await h.allowAll(ownerB.token, B.id, [ownerB.id], ['secrets', 'notes']);
  await h.sqlOk(ownerB.token, B.id, `INSERT INTO secrets (title, body, n) VALUES ('${B_CANARY}', 'the ${B_CANARY} body', 1)`);
  await h.sqlOk(ownerB.token, B.id, `INSERT INTO notes (body, n) VALUES ('${B_CANARY}_note', 1)`);

  ownerA = await h.user('ownerA');
  A = await h.workspace(ownerA.token, 'Attacker');
  attacker = await h.user('attacker');
  const colleague = await h.user('colleague');
  for (const u of [attacker, colleague]) await h.addMember(ownerA.token, A.id, u.email, 'member');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE notes (body text, n int)');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE items (k text UNIQUE, body text, n int)');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE docs (owner_id uuid, slug text UNIQUE, title text, body text, n int)');
  await h.allowAll(ownerA.token, A.id, [ownerA.id], ['notes', 'items', 'docs']);
  await h.sqlOk(ownerA.token, A.id, "INSERT INTO notes (body, n) VALUES ('A note 1', 1), ('A note 2', 2)");
  await h.sqlOk(ownerA.token, A.id, "INSERT INTO items (k, body, n) VALUES ('k1', 'item', 1)");
  await h.sqlOk(
    ownerA.token,
    A.id,
    `INSERT INTO docs (owner_id, slug, title, body, n) VALUES ('${colleague.id}', 'hidden-1', '${A_HIDDEN}', '${A_HIDDEN}', 7), ('${attacker.id}', 'own-1', '1', '1', 1)`,
  );
  const g = await h.group(ownerA.token, A.id, { name: 'attacker', user_ids: [attacker.id] });
  for (const operation of ['select', 'insert', 'update', 'delete']) {
    for (const table_name of ['notes', 'items']) await h.policy(ownerA.token, A.id, { policy_group_id: g, table_name, operation });
    await h.policy(ownerA.token, A.id, { policy_group_id: g, table_name: 'docs', operation, condition: { owner_id: '$user_id' } });
  }
  AP = `ws_${underscored(A.id)}_`;
  BP = `ws_${underscored(B.id)}_`;
  snapshotB = await snapshot(ownerB.token, B.id, B_SNAPSHOT);
  snapshotHidden = await snapshot(ownerA.token, A.id, HIDDEN_SNAPSHOT);
  expect(snapshotB).toContain(B_CANARY);
}, 180_000);

afterAll(async () => {
  await h?.close();
});

// ------------------------------------------------------------------------------------------------- the grammar

interface Gen {
  sql: string;
  /** Identifier values the user gave in alias-like positions; each must survive as one identifier. */
  aliases: string[];
}
const G = (sql: string, ...parts: Gen[]): Gen => ({ sql, aliases: parts.flatMap((p) => p.aliases) });
const join = (sep: string, parts: Gen[]): Gen => ({ sql: parts.map((p) => p.sql).join(sep), aliases: parts.flatMap((p) => p.aliases) });

function arbitraries() {
  // Hostile but legal inside a quoted identifier or a literal: these must come back as one identifier.
  const pieces = fc.constantFrom(
    '/*', '*/', '--', "'", '"', '$$', '$t$', '$q$', '\\', "\\'", '\n', '\r\n', '\t', ';', ' ', 'U&', "E'", 'UESCAPE',
    '\u{1F600}', 'é', '\u202E', '\uFEFF', 'x', 'j', 'pg_catalog', 'platform', 'user_data',
    'information_schema', 'public', `${BP}secrets`, `user_data.${BP}secrets`, `${BP}notes`, `${AP}notes`, 'pg_class',
    'SET ROLE postgres', 'postgres', ') z --', '*/ CROSS JOIN LATERAL (SELECT set_config($$role$$, $$postgres$$, true)) z --',
  );
  // Refused before anything runs (the parser reads C strings; PostgreSQL has no surrogates), so rarer.
  const refusedPieces = fc.constantFrom('\u0000', '\uD800', '\uDC00', '\uDBFF\uDFFF\uDC00');
  const value = fc.oneof(
    { weight: 12, arbitrary: fc.array(pieces, { minLength: 1, maxLength: 5 }).map((a) => a.join('')) },
    { weight: 1, arbitrary: fc.tuple(pieces, refusedPieces, pieces).map((a) => a.join('')) },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12, unit: 'binary' }) },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' }) },
    { weight: 1, arbitrary: fc.constantFrom('x'.repeat(64), 'é'.repeat(40), `${'y'.repeat(60)}/*`) },
    { weight: 3, arbitrary: fc.constantFrom('j', 'c', 'w', 'body', 'n') },
  );
  const hexEscape = (s: string) =>
    [...s]
      .map((ch) => {
        const cp = ch.codePointAt(0) as number;
        return cp > 0xffff ? `\\+${cp.toString(16).padStart(6, '0')}` : `\\${cp.toString(16).padStart(4, '0')}`;
      })
      .join('');
  /** An identifier slot: a quoted or U& identifier whose value is hostile. */
  const ident: fc.Arbitrary<Gen> = fc.oneof(
    { weight: 4, arbitrary: value.map((v) => ({ sql: `"${v.replaceAll('"', '""')}"`, aliases: [v] })) },
    { weight: 1, arbitrary: value.map((v) => ({ sql: `U&"${hexEscape(v)}"`, aliases: [v] })) },
  );
  /** A string literal slot. */
  const literal: fc.Arbitrary<Gen> = value.chain((v) =>
    fc.constantFrom(
      `'${v.replaceAll("'", "''")}'`,
      `E'${v.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`,
      v.includes('$q$') || v.endsWith('$') ? `'x'` : `$q$${v}$q$`,
      `U&'${hexEscape(v)}'`,
    ).map((sql) => ({ sql, aliases: [] })),
  );
  const plain = (sql: string): Gen => ({ sql, aliases: [] });
  const typeName = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('int', 'text', 'jsonb', 'bytea', 'int4range', 'name', '"char"', 'varchar(3)', 'text[]').map(plain) },
    { weight: 1, arbitrary: fc.constantFrom(
    'regclass', '_regclass', 'regclass[]', 'oid', '_oid', 'pg_catalog._oid',
    'regrole', '_regrole', '_aclitem', 'xid', 'tid', 'pg_lsn', 'pg_catalog.text', 'information_schema.sql_identifier',
    `"_${BP}secrets"`, `${BP}secrets`, `user_data.${BP}secrets`, `${AP}notes`, `_${AP}notes`,
  ).map(plain) },
  );
  const funcName = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('lower', 'upper', 'length', 'coalesce', 'concat', 'md5', 'to_jsonb', 'jsonb_build_object', 'format', 'quote_ident', 'abs', 'pg_catalog.lower').map(plain) },
    { weight: 1, arbitrary: fc.constantFrom(
    'set_config', 'pg_catalog.set_config', 'query_to_xml', 'current_setting', 'pg_read_file', 'pg_sleep', 'version', 'lo_import',
    'dblink', 'txid_current', 'user_data.wds_row_check', 'repeat', 'to_regclass', 'platform.f',
  ).map(plain) },
  );
  const ownTable = fc.constantFrom('notes', 'items', 'docs').map(plain);
  const otherTable = fc.constantFrom(
    `${BP}secrets`, `user_data.${BP}secrets`, `"${BP}notes"`, 'pg_catalog.pg_class', 'pg_class', 'pg_roles', 'information_schema.tables',
    'information_schema.columns', 'information_schema.schemata', 'platform.users', 'public.notes', `${AP}notes`, `user_data.${AP}notes`,
  ).map(plain);
  const table = fc.oneof({ weight: 12, arbitrary: ownTable }, { weight: 1, arbitrary: otherTable }, { weight: 1, arbitrary: ident.map((i) => ({ ...i, aliases: [] })) });
  const column = fc.oneof({ weight: 8, arbitrary: fc.constantFrom('body', 'n').map(plain) }, { weight: 1, arbitrary: ident.map((i) => ({ ...i, aliases: [] })) });

  const opSchema = fc.oneof({ weight: 3, arbitrary: fc.constant(plain('pg_catalog')) }, { weight: 1, arbitrary: ident });
  const { expr } = fc.letrec<{ expr: Gen }>((tie) => ({
    expr: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 8, arbitrary: column },
      { weight: 4, arbitrary: literal },
      { weight: 4, arbitrary: fc.integer({ min: -5, max: 5 }).map((n) => plain(String(n))) },
      { weight: 2, arbitrary: fc.tuple(tie('expr'), typeName).map(([e, t]) => G(`(${e.sql})::${t.sql}`, e)) },
      { weight: 1, arbitrary: fc.tuple(tie('expr'), typeName).map(([e, t]) => G(`CAST(${e.sql} AS ${t.sql})`, e)) },
      { weight: 2, arbitrary: fc.tuple(funcName, tie('expr')).map(([f, e]) => G(`${f.sql}((${e.sql})::text)`, e)) },
      { weight: 1, arbitrary: fc.tuple(ident, tie('expr')).map(([i, e]) => G(`make_interval(${i.sql} => length((${e.sql})::text))`, i, e)) },
      { weight: 1, arbitrary: fc.tuple(tie('expr'), tie('expr')).map(([a, b]) => G(`((${a.sql})::text || (${b.sql})::text)`, a, b)) },
      { weight: 1, arbitrary: fc.tuple(tie('expr'), tie('expr')).map(([a, b]) => G(`((${a.sql})::text = (${b.sql})::text)`, a, b)) },
      {
        weight: 1,
        arbitrary: fc.tuple(tie('expr'), opSchema, tie('expr')).map(([a, o, b]) => G(`((${a.sql})::text OPERATOR(${o.sql}.=) (${b.sql})::text)`, a, o, b)),
      },
      { weight: 1, arbitrary: fc.tuple(tie('expr'), ownTable).map(([e, t]) => G(`(SELECT ${e.sql} FROM ${t.sql} LIMIT 1)`, e)) },
    ),
  }));

  const target = fc.oneof(
    { weight: 3, arbitrary: fc.tuple(expr, ident).map(([e, i]) => G(`${e.sql} AS ${i.sql}`, e, i)) },
    { weight: 1, arbitrary: expr },
    { weight: 1, arbitrary: fc.constant(plain('*')) },
  );

  const select: fc.Arbitrary<Gen> = fc
    .record({
      cte: fc.option(fc.tuple(ident, expr, ownTable), { nil: undefined }),
      from: fc.oneof(
        fc.tuple(table, ident).map(([t, i]) => G(`${t.sql} AS ${i.sql}`, t, i)),
        fc.tuple(ownTable, ownTable, ident).map(([a, b, i]) => G(`${a.sql} t1 JOIN ${b.sql} t2 USING (body, n) AS ${i.sql}`, a, b, i)),
        fc.tuple(ownTable, ownTable, ident).map(([a, b, i]) => G(`(${a.sql} t1 JOIN ${b.sql} t2 USING (body, n)) AS ${i.sql}`, a, b, i)),
        fc.tuple(ownTable, ident, ident).map(([t, i, c]) => G(`${t.sql} AS ${i.sql} (${c.sql})`, t, i, c)),
        fc.tuple(ident, ident).map(([i, c]) => G(`generate_series(1, 3) AS ${i.sql} (${c.sql})`, i, c)),
        table,
      ),
      targets: fc.array(target, { minLength: 1, maxLength: 3 }),
      window: fc.option(ident, { nil: undefined }),
      where: fc.option(expr, { nil: undefined }),
      order: fc.option(fc.tuple(expr, fc.option(opSchema, { nil: undefined })), { nil: undefined }),
      union: fc.option(fc.tuple(expr, ident, expr, ownTable), { nil: undefined }),
    })
    .map((s) => {
      const parts: Gen[] = [];
      if (s.cte) parts.push(G(`WITH ${s.cte[0].sql} AS (SELECT ${s.cte[1].sql} AS cte_v FROM ${s.cte[2].sql}) `, s.cte[0], s.cte[1]));
      let targets = [...s.targets];
      if (s.union) targets = [G(`(${s.union[0].sql})::text AS ${s.union[1].sql}`, s.union[0], s.union[1])];
      else if (s.window) targets.push(G(`count(*) OVER ${s.window.sql}`, s.window));
      parts.push(G('SELECT '), join(', ', targets));
      parts.push(G(' FROM '), s.from);
      if (s.cte) parts.push(G(`, ${s.cte[0].sql}`));
      if (s.where) parts.push(G(' WHERE ('), s.where, G(') IS NOT NULL'));
      if (s.window && !s.union) parts.push(G(` WINDOW ${s.window.sql} AS ()`));
      if (s.union) parts.push(G(' UNION ALL SELECT ('), s.union[2], G(`)::text FROM ${s.union[3].sql}`));
      else if (s.order) {
        parts.push(G(' ORDER BY '), s.order[0]);
        if (s.order[1]) parts.push(G(` USING OPERATOR(${s.order[1].sql}.<)`, s.order[1]));
      }
      parts.push(G(' LIMIT 5'));
      return join('', parts);
    });

  const returning = fc.option(fc.tuple(expr, ident).map(([e, i]) => G(` RETURNING ${e.sql} AS ${i.sql}`, e, i)), { nil: undefined });
  const writeTable = fc.oneof({ weight: 12, arbitrary: ownTable }, { weight: 1, arbitrary: otherTable });
  const insert = fc
    .record({
      table: writeTable,
      body: literal,
      n: expr,
      conflict: fc.oneof(
        fc.constant(plain('')),
        fc.constant(plain(' ON CONFLICT DO NOTHING')),
        fc.constant(plain(' ON CONFLICT (k) DO UPDATE SET body = excluded.body')),
        // A constraint name is mapped to the workspace's physical name (or refused), so it is no alias to keep.
        ident.map((i) => G(` ON CONFLICT ON CONSTRAINT ${i.sql} DO NOTHING`)),
      ),
      returning,
    })
    .map((s) => join('', [G(`INSERT INTO ${s.table.sql} (body, n) VALUES (`), s.body, G(', length(('), s.n, G(')::text))'), s.conflict, s.returning ?? plain('')]));
  const update = fc
    .record({ table: writeTable, alias: fc.option(ident, { nil: undefined }), value: expr, where: expr, returning })
    .map((s) =>
      join('', [G(`UPDATE ${s.table.sql}`), s.alias ? G(` AS ${s.alias.sql}`, s.alias) : plain(''), G(' SET n = length(('), s.value, G(')::text) WHERE ('), s.where, G(') IS NULL'), s.returning ?? plain('')]),
    );
  const del = fc
    .record({ table: writeTable, where: expr, returning })
    .map((s) => join('', [G(`DELETE FROM ${s.table.sql} WHERE (`), s.where, G(") IS NOT NULL AND body = 'no such body'"), s.returning ?? plain('')]));
  const statement = fc.oneof({ weight: 5, arbitrary: select }, { weight: 2, arbitrary: insert }, { weight: 2, arbitrary: update }, { weight: 1, arbitrary: del });
  return { statement };
}

// ------------------------------------------------------------------------------------------------- the checks

const TYPE_FORBIDDEN = /^_?(reg|oid$|xid$|cid$|tid$|aclitem|ws_|pg_)/;

/** Problems of one piece of SQL the service produced. */
function checkProduced(label: string, produced: unknown, aliases: string[]): string[] {
  if (typeof produced !== 'string') return [`${label}: not a string: ${short(produced)}`];
  let tree: any;
  try {
    tree = parseOne(produced).tree;
  } catch (err) {
    return [`${label} does not re-parse as one statement (${(err as Error).message}): ${short(produced)}`];
  }
  const problems: string[] = [];
  const leaves = new Set<string>();
  const scopedInfo = produced.includes(`starts_with(c.table_name::text, '${AP}')`);

  const visit = (node: any, scope: ReadonlySet<string>): void => {
    if (Array.isArray(node)) {
      for (const x of node) visit(x, scope);
      return;
    }
    if (!node || typeof node !== 'object') {
      if (typeof node === 'string') leaves.add(node);
      return;
    }
    let inner = scope;
    const ctes: any[] | undefined = node.withClause?.ctes;
    if (ctes) {
      const names: string[] = ctes.map((c: any) => c.CommonTableExpr?.ctename);
      const all = new Set([...scope, ...names]);
      ctes.forEach((c: any, i: number) => {
        const bodyScope = node.withClause.recursive ? all : new Set([...scope, ...names.slice(0, i)]);
        leaves.add(names[i] as string);
        visit(c.CommonTableExpr?.aliascolnames, bodyScope);
        visit(c.CommonTableExpr?.ctequery, bodyScope);
      });
      inner = all;
    }
    if (node.RangeVar) {
      const rv = node.RangeVar;
      const ok =
        (rv.schemaname === 'user_data' && typeof rv.relname === 'string' && rv.relname.startsWith(AP)) ||
        (rv.schemaname === undefined && inner.has(rv.relname)) ||
        (rv.schemaname === 'information_schema' && (rv.relname === 'tables' || rv.relname === 'columns') && scopedInfo);
      if (!ok || rv.catalogname !== undefined) problems.push(`${label}: table reference ${short(rv)} in ${short(produced)}`);
    }
    if (node.FuncCall) {
      const parts: string[] = (node.FuncCall.funcname ?? []).map((n: any) => n.String?.sval);
      const name = parts.at(-1) ?? '';
      if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog' && parts[0] !== 'user_data')) {
        problems.push(`${label}: function ${parts.join('.')} in ${short(produced)}`);
      }
      if (!ALLOWED_FUNCTIONS.has(name) && !name.startsWith('wds_')) problems.push(`${label}: calls ${name}() in ${short(produced)}`);
    }
    if (node.TypeName) {
      const parts: string[] = (node.TypeName.names ?? []).map((n: any) => n.String?.sval);
      const name = parts.at(-1) ?? '';
      if ((parts.length > 1 && parts[0] !== 'pg_catalog') || TYPE_FORBIDDEN.test(name)) {
        problems.push(`${label}: type ${parts.join('.')} in ${short(produced)}`);
      }
    }
    for (const [k, v] of Object.entries(node)) if (k !== 'withClause') visit(v, inner);
    if (node.withClause) {
      for (const [k, v] of Object.entries(node.withClause)) if (k !== 'ctes') visit(v, inner);
    }
  };
  visit(tree, new Set());

  for (const alias of aliases) {
    // PostgreSQL truncates identifiers to 63 bytes; NUL and lone surrogates never reach the database as such.
    if (Buffer.byteLength(alias) > 63 || alias.includes('\u0000') || /[\uD800-\uDFFF]/.test(alias)) continue;
    if (!leaves.has(alias)) problems.push(`${label}: alias ${JSON.stringify(alias)} is no longer one identifier in ${short(produced)}`);
  }
  return problems;
}

function checkAnswer(label: string, r: Res): string[] {
  const problems: string[] = [];
  if (r.status >= 500) problems.push(`${label}: status ${r.status} ${short(r.body)}`);
  const text = JSON.stringify(r.body) ?? '';
  if (text.includes(B_CANARY)) problems.push(`${label}: B's canary in ${short(r.body)}`);
  if (text.includes(A_HIDDEN)) problems.push(`${label}: the hidden row in ${short(r.body)}`);
  if (typeof r.body?.error === 'string' && /syntax error|unterminated/i.test(r.body.error) && r.body.code === 'EXECUTION_ERROR') {
    problems.push(`${label}: the produced SQL did not parse in PostgreSQL: ${short(r.body)}`);
  }
  return problems;
}

const report = (sql: string, problems: string[]) => {
  if (problems.length) throw new Error(`${problems.join('\n')}\n  statement: ${JSON.stringify(sql)}`);
};

describe('fuzz: hostile identifiers and literals in generated statements', () => {
  test(`/sql: ${RUNS} statements, never a 5xx, nothing of B, the executed SQL stays inside A`, async () => {
    const { statement } = arbitraries();
    const codes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(statement, async ({ sql, aliases }) => {
        const r = await h.sql(attacker.token, A.id, sql);
        const code = r.status === 200 ? 'ok' : String(r.body?.code);
        codes.set(code, (codes.get(code) ?? 0) + 1);
        const problems = checkAnswer('sql', r);
        if (r.status === 200) problems.push(...checkProduced('executed_sql', r.body.executed_sql, aliases));
        report(sql, problems);
      }),
      { numRuns: RUNS, interruptAfterTimeLimit: 90_000, markInterruptAsFailure: false },
    );
    // The grammar must produce statements the service accepts, or the properties prove little.
    expect(codes.get('ok') ?? 0, JSON.stringify([...codes])).toBeGreaterThan(RUNS / 20);
  }, 180_000);

  test(`/sql/preview: ${RUNS} statements, never a 5xx, transformed and policy SQL stay inside A`, async () => {
    const { statement } = arbitraries();
    await fc.assert(
      fc.asyncProperty(statement, fc.boolean(), async ({ sql, aliases }, withPolicies) => {
        const r = await h.call('POST', `/api/v1/workspaces/${A.id}/sql/preview`, { token: attacker.token, body: { sql, with_policies: withPolicies } });
        const problems = checkAnswer('preview', r);
        if (r.status === 200) {
          problems.push(...checkProduced('transformed_sql', r.body.transformed_sql, aliases));
          if (typeof r.body.policy_sql === 'string') problems.push(...checkProduced('policy_sql', r.body.policy_sql, aliases));
        }
        report(sql, problems);
      }),
      { numRuns: RUNS, interruptAfterTimeLimit: 90_000, markInterruptAsFailure: false },
    );
  }, 180_000);

  test("afterwards B's rows and schema and A's hidden row are unchanged", async () => {
    expect(await snapshot(ownerB.token, B.id, B_SNAPSHOT)).toBe(snapshotB);
    expect(await snapshot(ownerA.token, A.id, HIDDEN_SNAPSHOT)).toBe(snapshotHidden);
  });
});
