import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Harness, hex, type Res, short, underscored } from './support.js';

/**
 * Bypass corpus for POST /workspaces/{id}/sql and /sql/preview.
 *
 * Workspace A (attacker's): the attacker is a plain member (no DDL, not a policy editor) with unconditional
 * policies on `notes` and `secrets` (named like B's table) and `{ owner_id: "$user_id" }` on every operation of
 * `docs`, which also holds a colleague's row marked A_HIDDEN_CANARY (title, body, meta; slug `hidden-1`).
 * Workspace B (victim, another user): `secrets`, `notes`, `docs` with B_CANARY_7f3a in several columns.
 *
 * A's DDL-group member (another member, no row policies) runs the few cases marked `as: 'ddl'`.
 *
 * Every statement goes to /sql, /sql/preview and /sql/preview with `with_policies`, as the attacker in A. No
 * response may contain a B canary, B's workspace id (dashed, underscored or as role name), B's physical table
 * names, A_HIDDEN_CANARY, the hidden row's id or owner, or file contents; no status may be 5xx. A value the
 * attacker sent in the statement itself does not count as leaked (previews echo `original_sql`).
 * Afterwards B's data and A's hidden row are unchanged and the attacker's own tables hold nothing exfiltrated.
 *
 * Placeholders: {B} B's id, {B_} with underscores, {Bhex} without dashes, {BP} B's physical prefix
 * (`ws_{B_}_`), {A}/{AP}/{Ahex} the same for A, {ME} the attacker, {OTHER} the colleague, {HID} the hidden row.
 * The attacker's visible docs: own-1 (title March, body 1, n 1), own-2 (April, 2, 2), doomed-1..3 (May, 3, 3),
 * meta `{"s": "<a date>"}`; the hidden row has n = 7 and is first in the heap.
 */

type Code =
  | 'ok'
  | 'PARSE_ERROR'
  | 'MULTIPLE_STATEMENTS'
  | 'TRANSACTION_NOT_ALLOWED'
  | 'UNSUPPORTED'
  | 'SCHEMA_ACCESS_DENIED'
  | 'INVALID_TABLE'
  | 'POLICY_DENIED'
  | 'DDL_FORBIDDEN'
  | 'EXECUTION_ERROR';

interface Case {
  sql: string;
  /** Outcome of /sql; absent: any non-5xx answer (only the leak checks apply). */
  expect?: Code;
  /** Exact rows of a successful statement. */
  rows?: unknown[];
  /** affected_rows of a successful write. */
  affected?: number;
  /** Part of the error message. */
  error?: string;
  /** Run as the DDL-group member of A instead of the attacker. */
  as?: 'ddl';
}

const OK = 'ok' as const;
const SCHEMA = 'SCHEMA_ACCESS_DENIED' as const;
const UNSUP = 'UNSUPPORTED' as const;
const INVALID = 'INVALID_TABLE' as const;
const TX = 'TRANSACTION_NOT_ALLOWED' as const;
const MULTI = 'MULTIPLE_STATEMENTS' as const;
const DENIED = 'POLICY_DENIED' as const;
const DDL = 'DDL_FORBIDDEN' as const;
const EXEC = 'EXECUTION_ERROR' as const;
const TIMEOUT = { expect: EXEC, error: 'statement timeout' };
const ROW_CAP = { expect: EXEC, error: 'row cap' };
/** Codes decided before execution: the previews must answer them too. */
const ANALYSIS_CODES = new Set<string>([SCHEMA, UNSUP, INVALID, TX, MULTI, 'PARSE_ERROR']);

/** An upsert whose conflicting row is the colleague's hidden row. */
const UPSERT_HIDDEN = "INSERT INTO docs (owner_id, slug, title, body) VALUES ('{ME}', 'hidden-1', 'x', '0') ON CONFLICT (slug)";

const corpus: Record<string, Case[]> = {
  'baseline: own tables through the policy filter': [
    { sql: "SELECT slug FROM docs WHERE slug LIKE 'own-%' ORDER BY slug", expect: OK, rows: [{ slug: 'own-1' }, { slug: 'own-2' }] },
    { sql: "SELECT count(*) AS c FROM docs WHERE owner_id <> '{ME}'", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT count(*) AS c FROM docs WHERE slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: 'TABLE docs', expect: OK },
    { sql: 'SELECT * FROM ONLY docs', expect: OK },
    { sql: 'SELECT * FROM docs*', expect: OK },
    { sql: 'SELECT title FROM secrets', expect: OK, rows: [{ title: 'A decoy' }] },
    { sql: 'SELECT d FROM docs d', expect: OK },
    { sql: 'SELECT to_jsonb(d) AS j FROM docs d', expect: OK },
    { sql: 'SELECT ctid, xmin FROM docs', expect: EXEC },
  ],

  'predicate precedence: OR against the injected AND': [
    { sql: "SELECT slug FROM docs WHERE slug = 'hidden-1' OR true", expect: OK },
    { sql: "SELECT count(*) AS c FROM docs WHERE owner_id = '{OTHER}' OR 1 = 1 AND slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT slug FROM docs WHERE NOT (owner_id = '{ME}')", expect: OK, rows: [] },
    { sql: "SELECT slug FROM docs WHERE (slug = 'hidden-1') IS NOT FALSE OR owner_id IS NULL", expect: OK, rows: [] },
    { sql: "SELECT slug FROM docs WHERE slug = 'hidden-1' UNION ALL SELECT slug FROM docs WHERE true OR false", expect: OK },
    { sql: "UPDATE docs SET n = n WHERE owner_id = '{OTHER}' OR slug IN ('own-1', 'hidden-1')", expect: OK, affected: 1 },
    { sql: "UPDATE docs SET title = title WHERE true OR owner_id = '{OTHER}' RETURNING slug, owner_id", expect: OK },
    { sql: "UPDATE docs SET owner_id = '{ME}' WHERE slug = 'hidden-1' OR 1 = 1 AND false", expect: OK, affected: 0 },
    { sql: "UPDATE docs SET title = docs.title FROM notes WHERE docs.slug = 'hidden-1' OR notes.n = -1", expect: OK, affected: 0 },
    { sql: "DELETE FROM docs WHERE slug = 'doomed-1' OR owner_id = '{OTHER}'", expect: OK, affected: 1 },
    { sql: "DELETE FROM docs WHERE owner_id = '{OTHER}' OR slug = 'doomed-2' RETURNING slug", expect: OK, rows: [{ slug: 'doomed-2' }] },
    { sql: "DELETE FROM docs USING notes WHERE docs.slug = 'hidden-1' OR notes.n = -1", expect: OK, affected: 0 },
    { sql: "UPDATE docs AS secrets SET title = title WHERE secrets.slug = 'hidden-1'", expect: OK, affected: 0 },
    { sql: "UPDATE docs AS d SET title = d.title FROM docs WHERE docs.slug = 'hidden-1' OR d.slug = 'hidden-1'", expect: OK, affected: 0 },
    { sql: "DELETE FROM docs AS x WHERE x.slug = 'hidden-1' OR x.owner_id <> '{ME}'", expect: OK, affected: 0 },
    { sql: "SELECT count(*) AS c FROM docs AS secrets WHERE secrets.slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT count(*) AS c FROM notes AS docs, docs AS d WHERE d.slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT slug FROM docs WHERE owner_id = ANY (ARRAY['{OTHER}']::uuid[])", expect: OK, rows: [] },
    { sql: 'SELECT slug FROM docs WHERE deleted_at IS NOT NULL', expect: OK, rows: [] },
    { sql: "UPDATE docs SET deleted_at = NULL WHERE slug = 'hidden-1' OR deleted_at IS NOT NULL", expect: OK, affected: 0 },
  ],

  'CTEs: plain, recursive, data-modifying, name scoping': [
    { sql: "WITH x AS (SELECT * FROM docs) SELECT count(*) AS c FROM x WHERE slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: 'WITH secrets AS (SELECT * FROM secrets) SELECT title FROM secrets', expect: OK, rows: [{ title: 'A decoy' }] },
    { sql: "WITH x AS MATERIALIZED (SELECT * FROM docs) SELECT slug FROM x WHERE owner_id <> '{ME}'", expect: OK, rows: [] },
    { sql: "WITH x AS (WITH y AS (SELECT * FROM docs) SELECT * FROM y) SELECT count(*) AS c FROM x WHERE slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r', expect: OK, rows: [{ n: 1 }, { n: 2 }, { n: 3 }] },
    {
      sql: "WITH RECURSIVE r AS (SELECT slug, 1 AS depth FROM docs UNION ALL SELECT d.slug, r.depth + 1 FROM docs d JOIN r ON d.slug = r.slug WHERE r.depth < 2) SELECT DISTINCT slug FROM r WHERE slug = 'hidden-1'",
      expect: OK,
      rows: [],
    },
    { sql: "WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT * FROM docs) SELECT count(*) AS c FROM a WHERE slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    // Non-recursive: `b` inside `a` is a table (there is none, so no policy either).
    { sql: 'WITH a AS (SELECT * FROM b), b AS (SELECT * FROM docs) SELECT * FROM a', expect: DENIED },
    { sql: 'WITH pg_class AS (SELECT * FROM pg_class) SELECT * FROM pg_class', expect: DENIED },
    { sql: 'WITH pg_roles AS (SELECT 1 AS x) SELECT x FROM pg_roles', expect: OK, rows: [{ x: 1 }] },
    { sql: 'WITH RECURSIVE pg_class AS (SELECT * FROM pg_class) SELECT relname FROM pg_class', expect: EXEC },
    { sql: 'WITH RECURSIVE {AP}docs AS (SELECT * FROM {AP}docs UNION ALL SELECT * FROM {AP}docs) SELECT * FROM {AP}docs', expect: EXEC },
    { sql: 'WITH {BP}secrets AS (SELECT 1 AS x) SELECT x FROM {BP}secrets', expect: OK, rows: [{ x: 1 }] },
    { sql: 'WITH x AS (SELECT * FROM {BP}secrets), {BP}secrets AS (SELECT 1) SELECT * FROM x', expect: INVALID },
    { sql: 'WITH x AS (SELECT * FROM user_data.{BP}secrets) SELECT 1', expect: SCHEMA },
    { sql: 'WITH x AS (SELECT * FROM pg_catalog.pg_authid) SELECT 1', expect: SCHEMA },
    { sql: '(WITH x AS (SELECT 1 AS a) SELECT a FROM x) UNION ALL SELECT a FROM x', expect: DENIED },
    { sql: "SELECT s.slug FROM (WITH docs AS (SELECT 'cte' AS slug) SELECT slug FROM docs) s, docs WHERE docs.slug = 'hidden-1'", expect: OK, rows: [] },
    { sql: "WITH d AS (DELETE FROM docs WHERE slug = 'hidden-1' RETURNING *) SELECT count(*) AS c FROM d", expect: OK, rows: [{ c: 0 }] },
    {
      sql: "WITH u AS (UPDATE docs SET title = title WHERE slug = 'hidden-1' OR owner_id = '{OTHER}' RETURNING *) SELECT count(*) AS c FROM u",
      expect: OK,
      rows: [{ c: 0 }],
    },
    {
      sql: "WITH i AS (INSERT INTO notes (body) SELECT title FROM docs WHERE slug = 'hidden-1' RETURNING body) SELECT count(*) AS c FROM i",
      expect: OK,
      rows: [{ c: 0 }],
    },
    { sql: "WITH i AS (INSERT INTO docs (owner_id, slug, title) VALUES ('{OTHER}', 'forged-1', 'x') RETURNING id) SELECT 1", expect: DENIED },
    { sql: 'WITH d AS (DELETE FROM user_data.{BP}secrets RETURNING *) SELECT * FROM d', expect: SCHEMA },
    { sql: "WITH d AS (UPDATE {BP}notes SET body = 'x' RETURNING *) SELECT 1", expect: INVALID },
    { sql: 'WITH m AS (MERGE INTO notes USING docs ON false WHEN NOT MATCHED THEN DO NOTHING RETURNING *) SELECT 1', expect: UNSUP },
    { sql: "WITH x AS (SELECT * FROM docs) DELETE FROM docs WHERE slug IN (SELECT slug FROM x) AND slug = 'hidden-1'", expect: OK, affected: 0 },
    // The CTE named docs yields the hidden row's id; the UPDATE target is still the filtered table.
    { sql: "WITH docs AS (SELECT '{HID}'::uuid AS id) UPDATE docs SET n = n WHERE id IN (SELECT id FROM docs)", expect: OK, affected: 0 },
  ],

  'subqueries in every clause': [
    { sql: "SELECT (SELECT count(*) FROM docs WHERE slug = 'hidden-1') AS c", expect: OK, rows: [{ c: 0 }] },
    { sql: 'SELECT (SELECT count(*) FROM user_data.{BP}secrets) AS c', expect: SCHEMA },
    { sql: "SELECT count(*) AS c FROM (SELECT * FROM docs) s WHERE s.owner_id = '{OTHER}'", expect: OK, rows: [{ c: 0 }] },
    { sql: 'SELECT * FROM (SELECT * FROM {BP}secrets) s', expect: INVALID },
    { sql: "SELECT body FROM notes WHERE body IN (SELECT title FROM docs WHERE slug = 'hidden-1')", expect: OK, rows: [] },
    { sql: "SELECT count(*) AS c FROM notes WHERE EXISTS (SELECT 1 FROM docs WHERE owner_id = '{OTHER}')", expect: OK, rows: [{ c: 0 }] },
    { sql: 'SELECT * FROM notes WHERE body = (SELECT body FROM public.secrets LIMIT 1)', expect: SCHEMA },
    { sql: "SELECT count(*) AS c FROM notes HAVING (SELECT count(*) FROM docs WHERE slug = 'hidden-1') > 0", expect: OK, rows: [] },
    { sql: 'SELECT 1 FROM notes HAVING count(*) > (SELECT count(*) FROM pg_catalog.pg_class)', expect: SCHEMA },
    { sql: 'SELECT body FROM notes ORDER BY (SELECT max(title) FROM docs) LIMIT 1', expect: OK },
    { sql: 'SELECT body FROM notes ORDER BY (SELECT 1 FROM information_schema.schemata LIMIT 1)', expect: SCHEMA },
    { sql: "SELECT slug FROM docs LIMIT (SELECT count(*) FROM docs WHERE owner_id = '{OTHER}')", expect: OK, rows: [] },
    { sql: 'SELECT body FROM notes OFFSET (SELECT count(*) FROM {BP}docs)', expect: INVALID },
    { sql: "VALUES ((SELECT count(*) FROM docs WHERE slug = 'hidden-1'))", expect: OK, rows: [{ column1: 0 }] },
    { sql: 'VALUES ((SELECT title FROM user_data.{BP}docs LIMIT 1))', expect: SCHEMA },
    {
      sql: "SELECT count(*) AS c FROM notes n JOIN notes m ON n.body = m.body AND EXISTS (SELECT 1 FROM docs WHERE slug = 'hidden-1')",
      expect: OK,
      rows: [{ c: 0 }],
    },
    { sql: "SELECT CASE WHEN EXISTS (SELECT 1 FROM docs WHERE slug = 'hidden-1') THEN 'leak' ELSE 'none' END AS r", expect: OK, rows: [{ r: 'none' }] },
    { sql: 'SELECT CASE WHEN true THEN (SELECT tablename FROM pg_catalog.pg_tables LIMIT 1) END', expect: SCHEMA },
    { sql: "SELECT ARRAY(SELECT title FROM docs WHERE owner_id = '{OTHER}') AS a", expect: OK, rows: [{ a: [] }] },
    { sql: 'SELECT * FROM docs TABLESAMPLE SYSTEM (100)', expect: UNSUP },
    { sql: "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM docs WHERE slug = 'hidden-1')) AS c FROM notes", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT count(*) OVER (PARTITION BY (SELECT title FROM docs WHERE slug = 'hidden-1')) AS c FROM notes LIMIT 1", expect: OK },
    { sql: "SELECT count(*) AS c FROM notes GROUP BY (SELECT title FROM docs WHERE slug = 'hidden-1')", expect: OK },
    { sql: "UPDATE notes SET body = coalesce((SELECT title FROM docs WHERE slug = 'hidden-1'), body) WHERE n = 1", expect: OK },
    { sql: "INSERT INTO notes (body, n) VALUES ('r', 99) RETURNING (SELECT title FROM docs WHERE slug = 'hidden-1') AS t", expect: OK, rows: [{ t: null }] },
    { sql: "INSERT INTO notes (body) VALUES ('x') RETURNING (SELECT 1 FROM pg_catalog.pg_class LIMIT 1)", expect: SCHEMA },
  ],

  'LATERAL and joins': [
    { sql: "SELECT n.body, x.title FROM notes n, LATERAL (SELECT title FROM docs d WHERE d.owner_id <> '{ME}') x", expect: OK, rows: [] },
    { sql: "SELECT x.* FROM notes n LEFT JOIN LATERAL (SELECT * FROM docs d WHERE d.slug = 'hidden-1') x ON true", expect: OK },
    { sql: 'SELECT x.* FROM docs d, LATERAL (SELECT to_jsonb(d) AS j) x', expect: OK },
    { sql: 'SELECT * FROM notes, LATERAL (SELECT * FROM user_data.{BP}secrets) s', expect: SCHEMA },
    { sql: 'SELECT e.* FROM notes CROSS JOIN LATERAL jsonb_each_text(to_jsonb(notes)) e', expect: OK },
    { sql: 'SELECT d2.slug, d2.owner_id FROM docs d1 RIGHT JOIN docs d2 ON true', expect: OK },
    { sql: "SELECT count(*) AS c FROM notes n FULL JOIN docs d ON false WHERE d.slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: 'SELECT * FROM notes NATURAL JOIN secrets', expect: OK },
    { sql: 'SELECT * FROM docs JOIN user_data.{BP}docs b USING (id)', expect: SCHEMA },
    { sql: "SELECT j.slug FROM (docs d JOIN secrets s ON true) AS j WHERE j.slug = 'hidden-1'", expect: OK, rows: [] },
  ],

  'set operations': [
    { sql: 'SELECT title FROM docs UNION SELECT body FROM notes', expect: OK },
    { sql: "SELECT slug FROM docs WHERE slug = 'hidden-1' UNION ALL SELECT slug FROM docs WHERE owner_id = '{OTHER}'", expect: OK, rows: [] },
    { sql: "SELECT slug FROM docs INTERSECT SELECT 'hidden-1'", expect: OK, rows: [] },
    { sql: "SELECT 'hidden-1' AS s EXCEPT SELECT slug FROM docs", expect: OK, rows: [{ s: 'hidden-1' }] },
    {
      sql: "(SELECT slug FROM docs UNION (SELECT slug FROM docs EXCEPT SELECT 'own-1')) INTERSECT (SELECT slug FROM docs WHERE slug = 'hidden-1')",
      expect: OK,
      rows: [],
    },
    { sql: 'SELECT body FROM notes UNION ALL SELECT body FROM user_data.{BP}notes', expect: SCHEMA },
    { sql: 'SELECT body FROM notes UNION SELECT relname::text FROM pg_catalog.pg_class', expect: SCHEMA },
    { sql: 'SELECT body FROM notes EXCEPT (SELECT body FROM {BP}notes)', expect: INVALID },
    { sql: 'TABLE notes UNION ALL TABLE notes', expect: OK },
    { sql: 'SELECT title FROM secrets UNION SELECT table_name FROM information_schema.tables ORDER BY 1', expect: OK, rows: [{ title: 'A decoy' }, { title: 'docs' }, { title: 'notes' }, { title: 'secrets' }] },
  ],

  'TABLE, ONLY, MERGE, INSERT … SELECT, UPDATE … FROM, DELETE … USING': [
    { sql: 'TABLE secrets', expect: OK },
    { sql: 'TABLE {BP}secrets', expect: INVALID },
    { sql: 'TABLE user_data.{BP}secrets', expect: SCHEMA },
    { sql: 'TABLE pg_catalog.pg_roles', expect: SCHEMA },
    { sql: 'SELECT * FROM ONLY user_data.{BP}docs', expect: SCHEMA },
    { sql: "SELECT count(*) AS c FROM ONLY docs WHERE slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: 'MERGE INTO notes n USING docs d ON n.body = d.title WHEN NOT MATCHED THEN INSERT (body) VALUES (d.title)', expect: UNSUP },
    { sql: 'MERGE INTO user_data.{BP}secrets s USING notes n ON true WHEN MATCHED THEN DELETE', expect: UNSUP },
    { sql: "MERGE INTO docs USING (SELECT 1) x ON true WHEN MATCHED THEN UPDATE SET owner_id = '{ME}'", expect: UNSUP },
    { sql: "INSERT INTO notes (body) SELECT title FROM docs WHERE owner_id = '{OTHER}'", expect: OK, affected: 0 },
    { sql: 'INSERT INTO notes (body) SELECT body FROM user_data.{BP}secrets', expect: SCHEMA },
    { sql: 'INSERT INTO notes (body) SELECT body FROM {BP}secrets', expect: INVALID },
    { sql: "INSERT INTO user_data.{BP}notes (body) VALUES ('pwned')", expect: SCHEMA },
    { sql: "INSERT INTO {BP}notes (body) VALUES ('pwned')", expect: INVALID },
    { sql: 'INSERT INTO secrets (title, body) SELECT title, body FROM secrets WHERE false', expect: OK, affected: 0 },
    { sql: "INSERT INTO docs (owner_id, slug, title) VALUES ('{OTHER}', 'forged-2', 'x')", expect: DENIED },
    { sql: "INSERT INTO docs (owner_id, slug, title) SELECT '{OTHER}', 'forged-3', 'x' FROM notes LIMIT 1", expect: DENIED },
    { sql: 'UPDATE notes SET body = s.body FROM user_data.{BP}secrets s', expect: SCHEMA },
    { sql: "UPDATE notes SET body = d.title FROM docs d WHERE d.slug = 'hidden-1'", expect: OK, affected: 0 },
    { sql: "UPDATE docs SET owner_id = '{OTHER}' WHERE slug = 'own-1'", expect: DENIED },
    { sql: "UPDATE user_data.{BP}secrets SET title = 'pwned'", expect: SCHEMA },
    { sql: "UPDATE {BP}secrets SET title = 'pwned'", expect: INVALID },
    { sql: 'DELETE FROM notes USING user_data.{BP}notes b WHERE notes.body = b.body', expect: SCHEMA },
    { sql: 'DELETE FROM user_data.{BP}notes', expect: SCHEMA },
    { sql: 'DELETE FROM {BP}docs', expect: INVALID },
    { sql: "DELETE FROM docs USING notes n WHERE docs.owner_id = '{OTHER}' RETURNING docs.title", expect: OK, rows: [] },
    { sql: "WITH d AS (DELETE FROM docs WHERE slug = 'doomed-3' OR owner_id = '{OTHER}' RETURNING slug) SELECT slug FROM d", expect: OK, rows: [{ slug: 'doomed-3' }] },
  ],

  'schema-qualified, physical, quoted and U& names': [
    { sql: 'SELECT * FROM user_data.{BP}secrets', expect: SCHEMA },
    { sql: 'SELECT * FROM {BP}secrets', expect: INVALID },
    { sql: 'SELECT * FROM "{BP}secrets"', expect: INVALID },
    { sql: 'SELECT * FROM "user_data"."{BP}secrets"', expect: SCHEMA },
    { sql: 'SELECT * FROM user_data.{AP}docs', expect: SCHEMA },
    { sql: 'SELECT * FROM {AP}docs', expect: INVALID },
    { sql: 'SELECT * FROM public.secrets', expect: SCHEMA },
    { sql: 'SELECT * FROM platform.users', expect: SCHEMA },
    { sql: 'SELECT * FROM platform.policies', expect: SCHEMA },
    { sql: 'SELECT * FROM pg_temp.notes', expect: SCHEMA },
    { sql: 'SELECT * FROM postgres.user_data.notes', expect: SCHEMA },
    { sql: 'SELECT * FROM "Docs"', expect: INVALID },
    { sql: 'SELECT * FROM "{BP}secrets "', expect: INVALID },
    { sql: "SELECT count(*) AS c FROM DOCS WHERE SLUG = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT count(*) AS c FROM U&\"\\0064ocs\" WHERE slug = 'hidden-1'", expect: OK, rows: [{ c: 0 }] },
    { sql: 'SELECT * FROM U&"\\0070g_catalog".pg_class', expect: SCHEMA },
    { sql: 'SELECT * FROM U&"\\0075ser_data"."{BP}secrets"', expect: SCHEMA },
    { sql: 'SELECT * FROM U&"!0070g_class" UESCAPE \'!\'', expect: DENIED },
    { sql: 'SELECT s.title FROM "secrets" "s"', expect: OK, rows: [{ title: 'A decoy' }] },
    { sql: "SELECT 'x' AS \"a\"\"b\", E'\\'' AS q", expect: OK, rows: [{ 'a"b': 'x', q: "'" }] },
    { sql: "SELECT 'x'' FROM pg_catalog.pg_class --' AS s", expect: OK, rows: [{ s: "x' FROM pg_catalog.pg_class --" }] },
    { sql: "SELECT $q$' UNION SELECT relname FROM pg_catalog.pg_class --$q$ AS s", expect: OK, rows: [{ s: "' UNION SELECT relname FROM pg_catalog.pg_class --" }] },
    { sql: "SELECT E'\\\\' AS s", expect: OK, rows: [{ s: '\\' }] },
    { sql: 'SELECT 1 AS "x"" FROM pg_catalog.pg_class --"', expect: OK, rows: [{ 'x" FROM pg_catalog.pg_class --': 1 }] },
    { sql: "SELECT body FROM notes WHERE body = U&'\\0027 OR 1=1 --'", expect: OK, rows: [] },
    { sql: 'SELECT "current_user"', expect: EXEC },
    { sql: 'SELECT 1 AS a\u0000; SELECT * FROM pg_catalog.pg_class' },
  ],

  'search_path and session tricks': [
    { sql: 'SELECT * FROM pg_class', expect: DENIED },
    { sql: 'SELECT * FROM "pg_class"', expect: DENIED },
    { sql: 'SELECT * FROM pg_authid', expect: DENIED },
    { sql: 'SET search_path = pg_catalog, user_data', expect: UNSUP },
    { sql: 'SET LOCAL search_path TO public', expect: UNSUP },
    { sql: "SELECT set_config('search_path', 'pg_catalog', true)", expect: UNSUP },
    { sql: "SELECT current_setting('search_path')", expect: UNSUP },
    { sql: "SELECT pg_catalog.current_setting('is_superuser')", expect: UNSUP },
    { sql: 'SET ROLE postgres', expect: UNSUP },
    { sql: 'SET ROLE wds_ws_{Bhex}', expect: UNSUP },
    { sql: 'RESET ROLE', expect: UNSUP },
    { sql: 'SET SESSION AUTHORIZATION postgres', expect: UNSUP },
    { sql: 'SET LOCAL statement_timeout = 0', expect: UNSUP },
    { sql: 'RESET ALL', expect: UNSUP },
    { sql: 'SHOW search_path', expect: UNSUP },
    { sql: 'SET TRANSACTION ISOLATION LEVEL SERIALIZABLE', expect: UNSUP },
    { sql: 'SELECT current_user', expect: UNSUP },
    { sql: 'SELECT session_user', expect: UNSUP },
    { sql: 'SELECT current_schema', expect: UNSUP },
    { sql: 'SELECT current_catalog', expect: UNSUP },
  ],

  'catalog, statistics and information_schema views': [
    ...['pg_class', 'pg_namespace', 'pg_roles', 'pg_authid', 'pg_stat_activity', 'pg_stats', 'pg_statistic', 'pg_settings', 'pg_proc', 'pg_tables', 'pg_shadow', 'pg_stat_user_tables', 'pg_largeobject', 'pg_policy'].map(
      (v): Case => ({ sql: `SELECT * FROM pg_catalog.${v}`, expect: SCHEMA }),
    ),
    ...['pg_stat_activity', 'pg_stats', 'pg_settings', 'pg_proc', 'pg_roles'].map((v): Case => ({ sql: `SELECT * FROM ${v}`, expect: DENIED })),
    ...['schemata', 'views', 'routines', 'table_privileges', 'role_table_grants', 'applicable_roles', 'enabled_roles', 'key_column_usage', 'triggers', 'sequences'].map(
      (v): Case => ({ sql: `SELECT * FROM information_schema.${v}`, expect: SCHEMA }),
    ),
    { sql: 'SELECT * FROM information_schema.tables t JOIN pg_catalog.pg_class c ON c.relname = t.table_name', expect: SCHEMA },
    { sql: 'SELECT * FROM "INFORMATION_SCHEMA".tables', expect: SCHEMA },
    { sql: 'SELECT table_name FROM "information_schema"."tables" ORDER BY table_name', expect: OK, rows: [{ table_name: 'docs' }, { table_name: 'notes' }, { table_name: 'secrets' }] },
    { sql: 'SELECT table_schema, table_name FROM information_schema.tables ORDER BY table_name', expect: OK, rows: ['docs', 'notes', 'secrets'].map((t) => ({ table_schema: 'public', table_name: t })) },
    { sql: 'SELECT DISTINCT table_name FROM information_schema.columns ORDER BY 1', expect: OK, rows: [{ table_name: 'docs' }, { table_name: 'notes' }, { table_name: 'secrets' }] },
    { sql: "SELECT count(*) AS c FROM information_schema.tables WHERE table_name LIKE 'ws%' OR table_schema <> 'public'", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT column_default FROM information_schema.columns WHERE column_default LIKE '%ws\\_%' OR column_default LIKE '%user_data%'", expect: OK, rows: [] },
    { sql: 'SELECT count(*) AS c FROM information_schema.tables t WHERE EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_name = t.table_name)', expect: OK, rows: [{ c: 3 }] },
    { sql: "INSERT INTO information_schema.tables (table_name) VALUES ('x')", expect: SCHEMA },
    { sql: "UPDATE information_schema.columns SET column_name = 'x'", expect: SCHEMA },
    { sql: 'DELETE FROM information_schema.tables', expect: SCHEMA },
    { sql: 'SELECT * FROM information_schema.tables FOR UPDATE', expect: UNSUP },
  ],

  'regclass/oid casts and type tricks': [
    { sql: "SELECT 'pg_class'::regclass::oid", expect: UNSUP },
    { sql: "SELECT 'user_data.{BP}secrets'::regclass", expect: UNSUP },
    { sql: "SELECT CAST('pg_catalog' AS regnamespace)", expect: UNSUP },
    { sql: 'SELECT 1259::oid', expect: UNSUP },
    { sql: "SELECT 'x'::pg_catalog.regclass", expect: UNSUP },
    { sql: 'SELECT \'x\'::"regclass"', expect: UNSUP },
    { sql: "SELECT 'now'::regproc", expect: UNSUP },
    { sql: "SELECT '(0,1)'::tid", expect: UNSUP },
    { sql: 'SELECT CAST(notes.tableoid AS regclass) FROM notes', expect: UNSUP },
    { sql: 'SELECT NULL::{BP}secrets', expect: UNSUP },
    { sql: 'SELECT NULL::user_data.{BP}secrets', expect: SCHEMA },
    { sql: "SELECT jsonb_populate_record(NULL::{BP}docs, '{}')", expect: UNSUP },
    { sql: 'SELECT (NULL::pg_class).relname', expect: UNSUP },
    { sql: 'SELECT NULL::information_schema.sql_identifier', expect: SCHEMA },
    { sql: 'SELECT body::xml FROM notes WHERE false', expect: OK, rows: [] },
  ],

  'forbidden functions: files, large objects, network, XML export, session': [
    { sql: "SELECT table_to_xml('docs', true, false, '')", expect: UNSUP },
    { sql: "SELECT query_to_xml('SELECT * FROM docs', true, false, '')", expect: UNSUP },
    { sql: "SELECT database_to_xml(true, false, '')", expect: UNSUP },
    { sql: "SELECT schema_to_xml('user_data', true, false, '')", expect: UNSUP },
    { sql: "SELECT pg_read_file('/etc/passwd')", expect: UNSUP },
    { sql: "SELECT pg_catalog.pg_read_binary_file('/etc/passwd')", expect: UNSUP },
    { sql: "SELECT * FROM pg_ls_dir('.')", expect: UNSUP },
    { sql: "SELECT pg_stat_file('postgresql.conf')", expect: UNSUP },
    { sql: "SELECT lo_import('/etc/passwd')", expect: UNSUP },
    { sql: 'SELECT lo_get(1)', expect: UNSUP },
    { sql: "SELECT lo_from_bytea(0, 'x')", expect: UNSUP },
    { sql: "SELECT * FROM dblink('dbname=postgres', 'SELECT relname FROM pg_class') AS t(a text)", expect: UNSUP },
    { sql: "SELECT dblink_connect('dbname=postgres')", expect: UNSUP },
    { sql: 'SELECT version()', expect: UNSUP },
    { sql: 'SELECT current_database()', expect: UNSUP },
    { sql: 'SELECT pg_sleep(5)', expect: UNSUP },
    { sql: 'SELECT pg_terminate_backend(pg_backend_pid())', expect: UNSUP },
    { sql: 'SELECT pg_advisory_lock(1)', expect: UNSUP },
    { sql: "SELECT has_table_privilege('user_data.{BP}secrets', 'select')", expect: UNSUP },
    { sql: "SELECT to_regclass('user_data.{BP}secrets')", expect: UNSUP },
    { sql: 'SELECT txid_current()', expect: UNSUP },
    { sql: "SELECT nextval('x')", expect: UNSUP },
    { sql: "SELECT pg_notify('c', 'x')", expect: UNSUP },
    { sql: "SELECT user_data.wds_row_check(true, 'x')", expect: UNSUP },
    { sql: 'SELECT user_data.uuidv7()', expect: UNSUP },
    { sql: 'SELECT "pg_sleep"(1)', expect: UNSUP },
    { sql: "SELECT xpath('/x', '<x/>')", expect: UNSUP },
    { sql: "SELECT format('%s', version())", expect: UNSUP },
    { sql: 'SELECT JSON_VALUE(\'1\'::jsonb, \'$\' DEFAULT version() ON ERROR)', expect: UNSUP },
    { sql: "SELECT xmlparse(document '<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>')" },
    { sql: "SELECT '<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>'::xml" },
    { sql: "SELECT to_tsvector('pg_catalog.english', 'x') IS NOT NULL AS t", expect: OK, rows: [{ t: true }] },
    { sql: "SELECT lower(pg_catalog.upper('x')) AS t", expect: OK, rows: [{ t: 'x' }] },
  ],

  'utility statements: COPY, DO, PREPARE, EXPLAIN, functions, views, rules, triggers, GRANT, …': [
    { sql: 'COPY notes TO STDOUT', expect: UNSUP },
    { sql: "COPY notes FROM PROGRAM 'id'", expect: UNSUP },
    { sql: "COPY (SELECT * FROM user_data.{BP}secrets) TO '/tmp/x'", expect: UNSUP },
    { sql: 'DO $$BEGIN PERFORM pg_sleep(1); END$$', expect: UNSUP },
    { sql: 'PREPARE p AS SELECT * FROM docs', expect: UNSUP },
    { sql: 'EXECUTE p', expect: UNSUP },
    { sql: 'DEALLOCATE ALL', expect: UNSUP },
    { sql: 'EXPLAIN ANALYZE SELECT * FROM docs', expect: UNSUP },
    { sql: 'EXPLAIN (VERBOSE) SELECT * FROM user_data.{BP}secrets', expect: UNSUP },
    { sql: "CREATE FUNCTION f() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1'", expect: UNSUP },
    { sql: "CREATE OR REPLACE FUNCTION user_data.wds_row_check(ok boolean, what text) RETURNS boolean LANGUAGE sql AS 'SELECT true'", expect: UNSUP },
    { sql: 'CREATE VIEW v AS SELECT * FROM docs', expect: UNSUP },
    { sql: 'CREATE MATERIALIZED VIEW mv AS SELECT * FROM docs', expect: UNSUP },
    { sql: 'CREATE RULE r AS ON INSERT TO notes DO ALSO SELECT 1', expect: UNSUP },
    { sql: 'CREATE TRIGGER t BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION f()', expect: UNSUP },
    { sql: 'CREATE POLICY p ON docs USING (true)', expect: UNSUP },
    { sql: 'LISTEN ch', expect: UNSUP },
    { sql: "NOTIFY ch, 'x'", expect: UNSUP },
    { sql: 'UNLISTEN *', expect: UNSUP },
    { sql: 'VACUUM notes', expect: UNSUP },
    { sql: 'VACUUM FULL', expect: UNSUP },
    { sql: 'ANALYZE notes', expect: UNSUP },
    { sql: 'CLUSTER notes', expect: UNSUP },
    { sql: 'REINDEX TABLE notes', expect: UNSUP },
    { sql: 'TRUNCATE notes', expect: UNSUP },
    { sql: 'LOCK TABLE notes', expect: UNSUP },
    { sql: 'CHECKPOINT', expect: UNSUP },
    { sql: 'DISCARD ALL', expect: UNSUP },
    { sql: "LOAD 'dblink'", expect: UNSUP },
    { sql: 'ALTER TABLE notes OWNER TO postgres', expect: UNSUP },
    { sql: 'ALTER TABLE user_data.{BP}secrets OWNER TO wds_ws_{Ahex}', expect: UNSUP },
    { sql: 'ALTER TABLE notes ENABLE ROW LEVEL SECURITY', expect: UNSUP },
    { sql: 'ALTER TABLE notes DISABLE TRIGGER ALL', expect: UNSUP },
    { sql: 'ALTER TABLE notes SET SCHEMA public', expect: UNSUP },
    { sql: 'GRANT SELECT ON notes TO PUBLIC', expect: UNSUP },
    { sql: 'GRANT wds_ws_{Bhex} TO CURRENT_USER', expect: UNSUP },
    { sql: 'REVOKE ALL ON notes FROM PUBLIC', expect: UNSUP },
    { sql: 'ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO PUBLIC', expect: UNSUP },
    { sql: 'CREATE ROLE evil SUPERUSER', expect: UNSUP },
    { sql: 'CREATE EXTENSION dblink', expect: UNSUP },
    { sql: 'CREATE SCHEMA evil', expect: UNSUP },
    { sql: "ALTER SYSTEM SET log_statement = 'all'", expect: UNSUP },
    { sql: "COMMENT ON TABLE notes IS 'x'", expect: UNSUP },
    { sql: 'CREATE SEQUENCE s', expect: UNSUP },
    { sql: 'DROP SCHEMA user_data CASCADE', expect: UNSUP },
    { sql: 'DROP VIEW v', expect: UNSUP },
    { sql: 'CALL p()', expect: UNSUP },
    { sql: "CREATE SERVER s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname 'postgres')", expect: UNSUP },
    { sql: 'IMPORT FOREIGN SCHEMA user_data FROM SERVER s INTO public', expect: UNSUP },
    { sql: 'SELECT * INTO evil_copy FROM docs', expect: UNSUP },
    { sql: 'CREATE TABLE evil_ctas AS SELECT * FROM docs', expect: UNSUP },
    { sql: 'SELECT * FROM docs FOR UPDATE', expect: UNSUP },
    { sql: 'SELECT * FROM notes FOR SHARE SKIP LOCKED', expect: UNSUP },
    { sql: 'SELECT $1', expect: UNSUP },
  ],

  'transactions and multiple statements': [
    { sql: 'BEGIN', expect: TX },
    { sql: 'START TRANSACTION READ WRITE', expect: TX },
    { sql: 'COMMIT', expect: TX },
    { sql: 'ROLLBACK', expect: TX },
    { sql: 'SAVEPOINT s', expect: TX },
    { sql: 'RELEASE SAVEPOINT s', expect: TX },
    { sql: 'ROLLBACK TO SAVEPOINT s', expect: TX },
    { sql: "PREPARE TRANSACTION 'x'", expect: TX },
    { sql: "COMMIT PREPARED 'x'", expect: TX },
    { sql: 'ABORT', expect: TX },
    { sql: 'SELECT 1; SELECT 2', expect: MULTI },
    { sql: 'SELECT * FROM docs; SELECT * FROM user_data.{BP}secrets', expect: MULTI },
    { sql: 'BEGIN; SET ROLE postgres; COMMIT', expect: MULTI },
    { sql: 'SELECT 1;;SELECT 2', expect: MULTI },
    { sql: 'COMMIT; SELECT * FROM pg_catalog.pg_class', expect: MULTI },
    { sql: 'SELECT 1 AS one; -- trailing comment', expect: OK, rows: [{ one: 1 }] },
  ],

  'DDL attempts (the attacker has no DDL rights)': [
    { sql: 'CREATE TABLE user_data.{BP}evil (a int)', expect: SCHEMA },
    { sql: 'CREATE TABLE {BP}evil (a int)', expect: INVALID },
    { sql: 'CREATE TABLE evil (a int)', expect: DDL },
    { sql: 'CREATE TABLE evil (LIKE user_data.{BP}secrets)', expect: UNSUP },
    { sql: 'CREATE TABLE evil (a uuid REFERENCES user_data.{BP}secrets (id))', expect: SCHEMA },
    { sql: 'CREATE TABLE evil () INHERITS (secrets)', expect: UNSUP },
    { sql: 'CREATE TEMP TABLE evil (a int)', expect: UNSUP },
    { sql: 'CREATE TABLE evil (a int) PARTITION BY RANGE (a)', expect: UNSUP },
    { sql: 'CREATE INDEX evil_idx ON user_data.{BP}secrets (title)', expect: SCHEMA },
    { sql: 'CREATE INDEX evil_idx ON docs ((body::int))', expect: DDL },
    { sql: 'DROP TABLE user_data.{BP}secrets', expect: SCHEMA },
    { sql: 'DROP TABLE {BP}secrets', expect: INVALID },
    { sql: 'DROP TABLE secrets, user_data.{BP}secrets', expect: SCHEMA },
    { sql: 'DROP TABLE secrets', expect: DDL },
    { sql: 'ALTER TABLE user_data.{BP}secrets ADD COLUMN x int', expect: SCHEMA },
    { sql: 'ALTER TABLE user_data.{BP}secrets RENAME TO x', expect: SCHEMA },
    { sql: 'ALTER TABLE secrets RENAME TO {BP}x', expect: INVALID },
    { sql: 'ALTER TABLE docs ALTER COLUMN body TYPE int USING body::int', expect: DDL },
    { sql: 'ALTER TABLE docs ADD CONSTRAINT evil_chk CHECK (body::int > 0)', expect: DDL },
    { sql: 'ALTER TABLE notes ADD COLUMN x int DEFAULT pg_backend_pid()', expect: UNSUP },
    { sql: 'CREATE TABLE evil (LIKE docs)', expect: UNSUP },
    { sql: 'ALTER TABLE docs RENAME COLUMN owner_id TO real_owner', expect: DDL },
  ],

  // DDL runs over every row of a table (a USING cast, an index, a CHECK), so DDL rights are owner rights over the
  // workspace's own data (docs/sql-and-policies.md). These cases only check that nothing of B leaks.
  'DDL-group member of A (DDL rights): DDL may touch every row of A, never anything of B': [
    { as: 'ddl', sql: 'ALTER TABLE docs ALTER COLUMN title TYPE int USING title::int', expect: EXEC },
    { as: 'ddl', sql: 'CREATE INDEX evil_idx ON docs ((title::int))', expect: EXEC },
    { as: 'ddl', sql: 'ALTER TABLE docs ADD CONSTRAINT evil_chk CHECK (title::int > 0)', expect: EXEC },
    { as: 'ddl', sql: 'CREATE TABLE evil (LIKE user_data.{BP}secrets)', expect: UNSUP },
    { as: 'ddl', sql: 'CREATE TABLE evil (a uuid REFERENCES {BP}secrets (id))', expect: INVALID },
    { as: 'ddl', sql: 'CREATE INDEX evil_idx ON docs (title) WHERE pg_catalog.pg_has_role(1, 1, \'x\')', expect: UNSUP },
    { as: 'ddl', sql: 'ALTER TABLE docs OWNER TO wds_ws_{Bhex}', expect: UNSUP },
    { as: 'ddl', sql: 'DROP TABLE {AP}docs', expect: INVALID },
  ],

  'error-based and constraint side channels': [
    { sql: "SELECT 1 / (SELECT count(*) FROM user_data.{BP}secrets WHERE title LIKE 'B%')", expect: SCHEMA },
    { sql: 'SELECT (SELECT title FROM user_data.{BP}secrets LIMIT 1)::int', expect: SCHEMA },
    { sql: "SELECT 1 / ((SELECT count(*) FROM docs WHERE slug = 'hidden-1') - 1) AS r", expect: OK, rows: [{ r: -1 }] },
    { sql: 'SELECT count(*) AS c FROM docs WHERE 1 / (n - 7) = 1', expect: OK, rows: [{ c: 0 }] },
    {
      sql: 'SELECT CASE WHEN (SELECT count(*) FROM docs WHERE n = 7) > 0 THEN 1 / (SELECT count(*) FROM notes WHERE false) ELSE 0 END AS r',
      expect: OK,
      rows: [{ r: 0 }],
    },
    { sql: "SELECT body::int AS b FROM docs WHERE slug LIKE 'own-%' ORDER BY 1", expect: OK, rows: [{ b: 1 }, { b: 2 }] },
    { sql: 'SELECT count(*) AS c FROM docs WHERE body::int < 0', expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT (SELECT title FROM docs WHERE slug = 'hidden-1')::int AS t", expect: OK, rows: [{ t: null }] },
    { sql: "INSERT INTO notes (n) SELECT title::int FROM docs WHERE slug = 'hidden-1'", expect: OK, affected: 0 },
    // A cheap erroring expression in the user's WHERE, evaluated on rows the policy hides.
    { sql: "SELECT slug FROM docs WHERE to_date(title, 'Month') IS NULL", expect: OK, rows: [] },
    { sql: "SELECT slug FROM docs WHERE jsonb_path_exists(meta, '$.s.datetime()') AND slug = 'hidden-1'", expect: OK, rows: [] },
    { sql: "SELECT count(*) AS c FROM docs WHERE jsonb_path_query_first(meta, '$.s.datetime()') IS NULL", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT count(*) AS c FROM notes WHERE EXISTS (SELECT 1 FROM docs d WHERE to_date(d.title, 'Month') IS NULL)", expect: OK, rows: [{ c: 0 }] },
    { sql: "SELECT d.slug FROM notes n JOIN docs d ON to_date(d.title, 'Month') IS NULL", expect: OK, rows: [] },
    { sql: "UPDATE docs SET n = n WHERE to_date(title, 'Month') IS NULL", expect: OK, affected: 0 },
    { sql: "UPDATE docs SET n = n WHERE jsonb_path_exists(meta, '$.s.datetime()') AND slug = 'hidden-1'", expect: OK, affected: 0 },
    { sql: "DELETE FROM docs WHERE to_date(title, 'Month') IS NULL", expect: OK, affected: 0 },
    { sql: "DELETE FROM docs WHERE jsonb_path_query_first(meta, '$.s.datetime()') IS NULL", expect: OK, affected: 0 },
    { sql: 'UPDATE docs SET n = n WHERE 1 / (n - 7) = 1', expect: OK, affected: 0 },
    { sql: 'DELETE FROM docs WHERE 1 / (n - 7) = 1', expect: OK, affected: 0 },
    // Upserts whose conflicting row is hidden: never updated, and its values never reach an error.
    { sql: `${UPSERT_HIDDEN} DO UPDATE SET title = 'pwned'`, expect: OK, affected: 0 },
    { sql: `${UPSERT_HIDDEN} DO UPDATE SET owner_id = '{ME}' RETURNING slug, title`, expect: OK, rows: [] },
    { sql: `${UPSERT_HIDDEN} DO NOTHING RETURNING slug`, expect: OK, rows: [] },
    { sql: "INSERT INTO docs AS t (owner_id, slug, title) VALUES ('{ME}', 'hidden-1', 'x') ON CONFLICT (slug) DO UPDATE SET title = 'pwned'", expect: OK, affected: 0 },
    { sql: "INSERT INTO docs (owner_id, slug, title) VALUES ('{ME}', 'own-1', 'x') ON CONFLICT (slug) DO UPDATE SET owner_id = '{OTHER}'", expect: DENIED },
    { sql: "INSERT INTO notes (body) VALUES ('x') ON CONFLICT ON CONSTRAINT {BP}secrets_pkey DO NOTHING", expect: INVALID },
    { sql: "INSERT INTO docs (id, owner_id, slug) VALUES ('{HID}', '{ME}', 'pk-probe')", expect: EXEC },
    // RETURNING OLD (PostgreSQL 18) on a row the policies hide; older servers refuse the syntax.
    { sql: "UPDATE docs SET title = 'x' WHERE slug = 'hidden-1' RETURNING old.title" },
    { sql: `${UPSERT_HIDDEN} DO UPDATE SET title = 'y' WHERE docs.body::int > 0`, expect: OK, affected: 0 },
    { sql: `${UPSERT_HIDDEN} DO UPDATE SET title = excluded.title WHERE to_date(docs.title, 'Month') IS NULL`, expect: OK, affected: 0 },
    { sql: `${UPSERT_HIDDEN} DO UPDATE SET title = 'y' WHERE 1 / (docs.n - 7) = 0`, expect: OK, affected: 0 },
    // Constraint violations: documented to reveal that a key exists, never a row's content.
    { sql: "INSERT INTO docs (owner_id, slug, title) VALUES ('{ME}', 'hidden-1', 'x')", expect: EXEC },
    { sql: "UPDATE docs SET slug = 'hidden-1' WHERE slug = 'own-1'", expect: EXEC },
    { sql: "INSERT INTO docs (owner_id, slug, title, n) VALUES ('{ME}', 'neg', 'x', -1)", expect: EXEC },
    { sql: "UPDATE docs SET n = -1 WHERE slug = 'own-1'", expect: EXEC },
    { sql: "INSERT INTO docs (owner_id, slug) VALUES (NULL, 'null-owner')", expect: EXEC },
    { sql: 'SELECT * FROM notes WHERE body = (SELECT title FROM docs)', expect: EXEC },
  ],

  'SQL/JSON and other syntax the rewriter must refuse or run, never answer with 5xx': [
    { sql: "SELECT jt.* FROM docs d, JSON_TABLE(d.meta, '$' COLUMNS (s text PATH '$.s')) jt" },
    { sql: "SELECT JSON_VALUE(meta, '$.s') AS v FROM docs" },
    { sql: "SELECT slug FROM docs WHERE JSON_EXISTS(meta, '$.s')" },
    { sql: "SELECT JSON_QUERY(meta, '$' WITH WRAPPER) AS q FROM docs" },
    { sql: "INSERT INTO notes AS n (body) VALUES ('x') ON CONFLICT (id) DO UPDATE SET (body, n) = (excluded.body, 1)" },
    { sql: "UPDATE notes SET body = 'x' WHERE CURRENT OF c" },
    { sql: 'SELECT * FROM docs FOR NO KEY UPDATE', expect: UNSUP },
  ],

  'resource abuse: statement timeout and row cap': [
    { sql: 'SELECT count(*) FROM generate_series(1, 10000000000) g', ...TIMEOUT },
    { sql: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r', ...TIMEOUT },
    { sql: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r', ...ROW_CAP },
    { sql: 'SELECT g FROM generate_series(1, 1000) g', ...ROW_CAP },
    { sql: 'SELECT count(*) FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100000) b', ...TIMEOUT },
    { sql: 'SELECT count(*) FROM notes a, notes b, docs c, generate_series(1, 1000000000) g', ...TIMEOUT },
    { sql: 'SELECT n1.body FROM notes n1, notes n2, generate_series(1, 1000) g', ...ROW_CAP },
    { sql: "INSERT INTO notes (body) SELECT 'x' FROM generate_series(1, 10000000000) g WHERE g < 0", ...TIMEOUT },
    { sql: 'UPDATE notes SET body = body WHERE EXISTS (SELECT 1 FROM generate_series(1, 10000000000) g WHERE g < 0)', ...TIMEOUT },
    { sql: "INSERT INTO notes (body) SELECT 'x' FROM generate_series(1, 1000) RETURNING body", ...ROW_CAP },
  ],
};

// ---------------------------------------------------------------------------------------------------------------

const B_CANARY = 'B_CANARY_7f3a';
const A_CANARY = 'A_HIDDEN_CANARY';

let h: Harness;
type User = Awaited<ReturnType<Harness['user']>>;
let attacker: User;
let ddlMember: User;
let ownerA: User;
let ownerB: User;
let A: { id: string };
let B: { id: string };
let hiddenId: string;
let attackerGroup: string;
let vars: Record<string, string>;
let secretTokens: [string, string][];
let snapshotB: unknown;
let snapshotHidden: unknown;

const fill = (sql: string) => sql.replace(/\{(\w+)\}/g, (m, k: string) => vars[k] ?? m);

async function snapshot(token: string, wsId: string, statements: string[]) {
  const out: unknown[] = [];
  for (const sql of statements) out.push((await h.sqlOk(token, wsId, sql)).rows);
  return JSON.stringify(out);
}
const B_SNAPSHOT = [
  'SELECT * FROM secrets ORDER BY id',
  'SELECT * FROM notes ORDER BY id',
  'SELECT * FROM docs ORDER BY id',
  'SELECT table_name, column_name, data_type, column_default, is_nullable FROM information_schema.columns ORDER BY table_name, column_name',
];
const HIDDEN_SNAPSHOT = ["SELECT * FROM docs WHERE slug = 'hidden-1'"];
/** What a DDL member may see of A's own rows. */
const WITHIN_A = new Set(['A_HIDDEN_CANARY', "the hidden row's id", "the hidden row's owner"]);

/** What the attacker must never see in any response, unless the statement itself contains it. */
function leaks(label: string, sql: string, r: Res, ownerRights = false): string[] {
  const problems: string[] = [];
  if (r.status >= 500) problems.push(`${label}: status ${r.status} ${short(r.body)}`);
  const text = JSON.stringify(r.body).toLowerCase();
  const sent = sql.toLowerCase();
  for (const [name, token] of secretTokens) {
    if (ownerRights && WITHIN_A.has(name)) continue;
    const t = token.toLowerCase();
    if (!sent.includes(t) && text.includes(t)) problems.push(`${label}: response contains ${name}: ${short(r.body)}`);
  }
  return problems;
}

/** Rows of a successful statement hold only the attacker's own docs. */
function visibleOnly(label: string, r: Res): string[] {
  const problems: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if ('owner_id' in o && o.owner_id !== null && o.owner_id !== attacker.id) problems.push(`${label}: row of another owner ${short(o)}`);
      if (o.slug === 'hidden-1') problems.push(`${label}: hidden row ${short(o)}`);
      Object.values(o).forEach(walk);
    }
  };
  walk(r.body?.rows);
  return problems;
}

async function runCase(c: Case): Promise<string[]> {
  const sql = fill(c.sql);
  const base = `/api/v1/workspaces/${A.id}/sql`;
  const token = c.as === 'ddl' ? ddlMember.token : attacker.token;
  const run = await h.sql(token, A.id, sql);
  const preview = await h.call('POST', `${base}/preview`, { token, body: { sql } });
  const withPolicies = await h.call('POST', `${base}/preview`, { token, body: { sql, with_policies: true } });
  const problems = [
    ...leaks('sql', sql, run, c.as === 'ddl'),
    ...leaks('preview', sql, preview),
    ...leaks('preview+policies', sql, withPolicies),
  ];
  if (c.expect === undefined) return problems;

  const got = run.status === 200 ? OK : run.body?.code;
  if (got !== c.expect) problems.push(`sql: expected ${c.expect}, got ${run.status} ${short(run.body)}`);
  if (c.expect === OK && run.status === 200) {
    problems.push(...visibleOnly('sql', run));
    if (c.rows && !isDeepStrictEqual(run.body.rows, c.rows)) problems.push(`sql: rows ${short(run.body.rows)}, expected ${short(c.rows)}`);
    if (c.affected !== undefined && run.body.affected_rows !== c.affected) {
      problems.push(`sql: affected_rows ${run.body.affected_rows}, expected ${c.affected}`);
    }
  }
  if (c.error && !String(run.body?.error ?? '').includes(c.error)) problems.push(`sql: error should mention "${c.error}": ${short(run.body)}`);

  if (ANALYSIS_CODES.has(c.expect)) {
    for (const [label, r] of [['preview', preview], ['preview+policies', withPolicies]] as const) {
      if (r.body?.code !== c.expect) problems.push(`${label}: expected ${c.expect}, got ${r.status} ${short(r.body)}`);
    }
  } else {
    for (const [label, r] of [['preview', preview], ['preview+policies', withPolicies]] as const) {
      if (r.status !== 200) problems.push(`${label}: expected 200, got ${r.status} ${short(r.body)}`);
    }
    if (c.expect === OK && withPolicies.status === 200 && typeof withPolicies.body.policy_sql !== 'string') {
      problems.push(`preview+policies: no policy_sql for an allowed statement ${short(withPolicies.body)}`);
    }
  }
  return problems;
}

beforeAll(async () => {
  h = await Harness.create();

  // Victim workspace B.
  ownerB = await h.user('victim');
  B = await h.workspace(ownerB.token, 'Victim');
  await h.sqlOk(ownerB.token, B.id, 'CREATE TABLE secrets (title text, body text, meta jsonb, n int)');
  await h.sqlOk(ownerB.token, B.id, 'CREATE TABLE notes (body text, n int)');
  await h.sqlOk(ownerB.token, B.id, 'CREATE TABLE docs (owner_id uuid, slug text UNIQUE, title text, body text, meta jsonb, n int)');
  await h.allowAll(ownerB.token, B.id, [ownerB.id], ['secrets', 'notes', 'docs']);
  await h.sqlOk(
    ownerB.token,
    B.id,
    `INSERT INTO secrets (title, body, meta, n) VALUES ('${B_CANARY}_title', 'the ${B_CANARY} body', '{"k": "${B_CANARY}"}', 42), ('plain', '${B_CANARY}', null, 1)`,
  );
  await h.sqlOk(ownerB.token, B.id, `INSERT INTO notes (body, n) VALUES ('${B_CANARY}_note', 1), ('March', 2)`);
  await h.sqlOk(
    ownerB.token,
    B.id,
    `INSERT INTO docs (owner_id, slug, title, body, meta, n) VALUES ('${ownerB.id}', 'hidden-1', '${B_CANARY}', '${B_CANARY}', '{"s": "${B_CANARY}"}', 7), ('${ownerB.id}', 'own-1', 'March', '1', '{"s": "${B_CANARY}"}', 1)`,
  );

  // Attacker workspace A.
  ownerA = await h.user('ownerA');
  A = await h.workspace(ownerA.token, 'Attacker');
  attacker = await h.user('attacker');
  const colleague = await h.user('colleague');
  await h.addMember(ownerA.token, A.id, attacker.email, 'member');
  await h.addMember(ownerA.token, A.id, colleague.email, 'member');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE docs (owner_id uuid NOT NULL, slug text UNIQUE, title text, body text, meta jsonb, n int CHECK (n >= 0))');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE notes (body text, n int)');
  await h.sqlOk(ownerA.token, A.id, 'CREATE TABLE secrets (title text, body text)');
  const ownerGroup = await h.allowAll(ownerA.token, A.id, [ownerA.id], ['docs', 'notes', 'secrets']);
  // The colleague's row goes first, so a scan meets it before the attacker's rows.
  const hidden = await h.sqlOk(
    ownerA.token,
    A.id,
    `INSERT INTO docs (owner_id, slug, title, body, meta, n) VALUES ('${colleague.id}', 'hidden-1', '${A_CANARY}', '${A_CANARY}', '{"s": "${A_CANARY}"}', 7) RETURNING id`,
  );
  hiddenId = hidden.rows[0].id;
  await h.sqlOk(
    ownerA.token,
    A.id,
    `INSERT INTO docs (owner_id, slug, title, body, meta, n) VALUES
      ('${attacker.id}', 'own-1', 'March', '1', '{"s": "2024-01-01"}', 1),
      ('${attacker.id}', 'own-2', 'April', '2', '{"s": "2024-02-01"}', 2),
      ('${attacker.id}', 'doomed-1', 'May', '3', '{"s": "2024-03-01"}', 3),
      ('${attacker.id}', 'doomed-2', 'May', '3', '{"s": "2024-03-01"}', 3),
      ('${attacker.id}', 'doomed-3', 'May', '3', '{"s": "2024-03-01"}', 3)`,
  );
  await h.sqlOk(ownerA.token, A.id, "INSERT INTO notes (body, n) VALUES ('A note 1', 1), ('A note 2', 2)");
  await h.sqlOk(ownerA.token, A.id, "INSERT INTO secrets (title, body) VALUES ('A decoy', 'A decoy body')");
  const g = await h.group(ownerA.token, A.id, { name: 'attacker', user_ids: [attacker.id] });
  attackerGroup = g;
  for (const operation of ['select', 'insert', 'update', 'delete']) {
    for (const table_name of ['notes', 'secrets']) await h.policy(ownerA.token, A.id, { policy_group_id: g, table_name, operation });
    await h.policy(ownerA.token, A.id, { policy_group_id: g, table_name: 'docs', operation, condition: { owner_id: '$user_id' } });
  }
  // A second member may run DDL (and has no row policies); nobody but the owner may edit policies.
  ddlMember = await h.user('ddl-member');
  await h.addMember(ownerA.token, A.id, ddlMember.email, 'member');
  const ddlGroup = await h.group(ownerA.token, A.id, { name: 'ddl', user_ids: [ddlMember.id] });
  const patch = await h.call('PATCH', `/api/v1/workspaces/${A.id}`, {
    token: ownerA.token,
    body: { policy_editor_policy_group_id: ownerGroup, ddl_policy_group_id: ddlGroup },
  });
  if (patch.status !== 200) throw new Error(`patch workspace: ${patch.status} ${JSON.stringify(patch.body)}`);

  vars = {
    B: B.id,
    B_: underscored(B.id),
    Bhex: hex(B.id),
    BP: `ws_${underscored(B.id)}_`,
    A: A.id,
    A_: underscored(A.id),
    Ahex: hex(A.id),
    AP: `ws_${underscored(A.id)}_`,
    ME: attacker.id,
    OTHER: colleague.id,
    HID: hiddenId,
  };
  secretTokens = [
    ['a B canary', B_CANARY],
    ['A_HIDDEN_CANARY', A_CANARY],
    ["B's workspace id", B.id],
    ["B's workspace id with underscores (B's physical names)", underscored(B.id)],
    ["B's workspace id without dashes (B's role)", hex(B.id)],
    ["the hidden row's id", hiddenId],
    ["the hidden row's owner", colleague.id],
    ['/etc/passwd contents', 'root:x:0:0'],
  ];
  snapshotB = await snapshot(ownerB.token, B.id, B_SNAPSHOT);
  snapshotHidden = await snapshot(ownerA.token, A.id, HIDDEN_SNAPSHOT);
  expect(String(snapshotB)).toContain(B_CANARY);
  expect(String(snapshotHidden)).toContain(A_CANARY);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('setup sanity', () => {
  test('the attacker sees exactly their own docs and cannot reach B at all', async () => {
    const own = await h.sqlOk(attacker.token, A.id, 'SELECT slug FROM docs ORDER BY slug');
    expect(own.rows.map((r: any) => r.slug)).toEqual(['doomed-1', 'doomed-2', 'doomed-3', 'own-1', 'own-2']);
    for (const path of [`/api/v1/workspaces/${B.id}/sql`, `/api/v1/workspaces/${B.id}/sql/preview`]) {
      const r = await h.call('POST', path, { token: attacker.token, body: { sql: 'SELECT * FROM secrets' } });
      expect([r.status, r.body.code]).toEqual([403, 'FORBIDDEN']);
    }
    const policy = await h.call('POST', '/api/v1/policies', {
      token: attacker.token,
      workspace: A.id,
      body: { name: 'me', mode: 'allow', policy_group_id: attackerGroup, table_name: 'docs', operation: 'select' },
    });
    expect([policy.status, policy.body.code]).toEqual([403, 'FORBIDDEN']);
  });
});

let count = 0;
for (const [category, cases] of Object.entries(corpus)) {
  describe(category, () => {
    for (const c of cases) {
      const n = ++count;
      test(`#${n}${c.as ? ` [${c.as}]` : ''} ${c.sql.replaceAll('\u0000', ' ').replace(/\s+/g, ' ').slice(0, 110)}`, async () => {
        const problems = await runCase(c);
        expect(problems, fill(c.sql)).toEqual([]);
      });
    }
  });
}

describe('after the corpus', () => {
  test('the corpus has at least 150 statements', () => {
    expect(count).toBeGreaterThanOrEqual(150);
  });

  test("B's data and schema are byte-for-byte unchanged", async () => {
    expect(await snapshot(ownerB.token, B.id, B_SNAPSHOT)).toBe(snapshotB);
  });

  test("A's hidden row is unchanged", async () => {
    expect(await snapshot(ownerA.token, A.id, HIDDEN_SNAPSHOT)).toBe(snapshotHidden);
  });

  test('nothing was exfiltrated into tables the attacker can read', async () => {
    const problems: string[] = [];
    for (const sql of ['SELECT * FROM notes', 'SELECT * FROM secrets', 'SELECT * FROM docs']) {
      problems.push(...leaks(sql, sql, await h.sql(attacker.token, A.id, sql)));
    }
    expect(problems).toEqual([]);
  });

  test('no stray tables appeared in either workspace', async () => {
    const tables = async (token: string, ws: string) =>
      (await h.sqlOk(token, ws, 'SELECT table_name FROM information_schema.tables ORDER BY 1')).rows.map((r: any) => r.table_name);
    expect(await tables(ownerA.token, A.id)).toEqual(['docs', 'notes', 'secrets']);
    expect(await tables(ownerB.token, B.id)).toEqual(['docs', 'notes', 'secrets']);
  });
});
