import { readFileSync } from 'node:fs';
import { workspaceRole } from '@wds/sql-rewriter';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Harness } from './support.js';

/**
 * Issue 28, finding 4: what one statement of user SQL can make its PostgreSQL backend allocate is bounded. Every
 * shape that builds far more than its input (format widths, replace/regexp_replace growth, collecting aggregates,
 * ARRAY(subquery), recursive doubling) is refused with 400 and a message saying what was too large, and the peak
 * resident memory of the workspace's backends (VmHWM, read by the test from /proc through the service's view of
 * pg_stat_activity) stays far below what the bombs allocate unbounded (600 MB and more each).
 */

let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let service: pg.Client;

/** Peak RSS of a backend a bomb may reach: a backend's own few MB plus the shared memory it touched, plus the bounds. */
const PEAK_LIMIT_BYTES = 256 * 1024 * 1024;

beforeAll(async () => {
  // The bombs must meet their bound, not the statement timeout, on a busy machine.
  h = await Harness.create({ SQL_STATEMENT_TIMEOUT_MS: '120000' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'memory');
  service = new pg.Client({ connectionString: h.url });
  await service.connect();
});

afterAll(async () => {
  await service?.end();
  await h?.close();
});

/** The highest peak RSS (bytes) of the workspace's backends, or undefined where /proc of the server is not ours to read. */
async function backendPeak(): Promise<number | undefined> {
  const { rows } = await service.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE usename = $1', [workspaceRole(ws.id)]);
  let peak: number | undefined;
  for (const { pid } of rows) {
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue;
    }
    const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
    if (Number.isFinite(kb)) peak = Math.max(peak ?? 0, kb * 1024);
  }
  return peak;
}

const BOUNDED = /would build a value of|would collect more than|widths given by an argument|a row may carry at most|would copy its arguments/;

const BOMBS: [string, string][] = [
  ['format width', `SELECT length(format('%600000000s', 'x'))`],
  ['format width of an argument', `SELECT length(format('%*s', 600000000, 'x'))`],
  ['format positional width of an argument', `SELECT length(format('%1$*2$s', 'x', 600000000))`],
  ['format left-aligned width of an argument', `SELECT length(format('%-*s', 600000000, 'x'))`],
  ['format widths of a computed format string', `SELECT length(format(string_agg('%9999s', ''), 'x')) FROM generate_series(1, 5000)`],
  ['format copying one argument by position', `SELECT length(format(string_agg('%1$s', ''), format('%100000s', ''))) FROM generate_series(1, 100000)`],
  ['replace growth', `SELECT length(replace(format('%1000000s', ''), ' ', format('%600s', '')))`],
  ['regexp_replace growth', `SELECT length(regexp_replace(format('%1000000s', ''), ' ', format('%600s', ''), 'g'))`],
  ['regexp_replace growth, N = 0', `SELECT length(regexp_replace(format('%1000000s', ''), ' ', format('%600s', ''), 1, 0))`],
  ['string_agg', `SELECT length(string_agg(format('%10000s', g), ',')) FROM generate_series(1, 1000000) g`],
  ['string_agg of small values', `SELECT length(string_agg(g::text, ',')) FROM (SELECT generate_series(1, 100000000) g) s`],
  ['string_agg delimiter', `SELECT length(string_agg('', format('%100000s', ''))) FROM generate_series(1, 100000)`],
  ['string_agg constant delimiter', `SELECT length(string_agg(g::text, '${' '.repeat(100_000)}')) FROM generate_series(1, 100000) g`],
  ['array_agg', `SELECT cardinality(array_agg(g)) FROM (SELECT generate_series(1, 100000000) g) s`],
  ['array_agg of a constant', `SELECT cardinality(array_agg(1)) FROM (SELECT generate_series(1, 100000000)) s`],
  ['json_agg', `SELECT length(json_agg(format('%10000s', g))::text) FROM generate_series(1, 1000000) g`],
  ['jsonb_agg', `SELECT jsonb_array_length(jsonb_agg(format('%10000s', g))) FROM generate_series(1, 1000000) g`],
  ['json_object_agg', `SELECT length(json_object_agg(g, format('%10000s', g))::text) FROM generate_series(1, 1000000) g`],
  ['jsonb_object_agg', `SELECT length(jsonb_object_agg(g, format('%10000s', g))::text) FROM generate_series(1, 1000000) g`],
  ['aggregate over a window', `SELECT length(string_agg(format('%10000s', g), ',') OVER ()) FROM generate_series(1, 1000000) g LIMIT 1`],
  ['aggregate with DISTINCT and FILTER', `SELECT length(string_agg(DISTINCT format('%10000s', g), ',' ORDER BY format('%10000s', g)) FILTER (WHERE g > 0)) FROM generate_series(1, 1000000) g`],
  ['ARRAY(subquery)', `SELECT cardinality(ARRAY(SELECT format('%10000s', g) FROM generate_series(1, 1000000) g))`],
  ['ARRAY(subquery) of a constant', `SELECT cardinality(ARRAY(SELECT '${'x'.repeat(5000)}' FROM generate_series(1, 1000000)))`],
  ['ARRAY(subquery) of a set operation', `SELECT cardinality(ARRAY(SELECT 'a' UNION ALL SELECT format('%10000s', g) FROM generate_series(1, 1000000) g))`],
  ['ARRAY(SELECT * …)', `SELECT cardinality(ARRAY(SELECT * FROM (SELECT format('%10000s', g) FROM generate_series(1, 1000000) g) s))`],
  ['ARRAY(SELECT (x).* …)', `SELECT cardinality(ARRAY(SELECT (x).* FROM (SELECT ROW(format('%10000s', g)) FROM generate_series(1, 1000000) g) s(x)))`],
  ['recursive doubling with ||', `WITH RECURSIVE r(s, n) AS (SELECT 'x', 1 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 40) SELECT max(length(s)) FROM r`],
  ['recursive doubling with concat', `WITH RECURSIVE r(s, n) AS (SELECT 'x'::text, 1 UNION ALL SELECT concat(s, s), n + 1 FROM r WHERE n < 40) SELECT max(length(s)) FROM r`],
  ['recursive doubling through a LATERAL subquery and *', `WITH RECURSIVE r(s, n) AS (SELECT 'x', 1 UNION ALL SELECT x.* FROM r AS q JOIN LATERAL (SELECT q.s || q.s, q.n + 1) x ON true WHERE q.n < 40) SELECT max(length(s)) FROM r`],
  ['recursive doubling behind an aliased join', `WITH RECURSIVE r(s, n) AS (SELECT 'x', 1 UNION ALL SELECT j.s || j.s, j.n + 1 FROM (r JOIN generate_series(1, 1) g ON true) AS j WHERE j.n < 40) SELECT max(length(s)) FROM r`],
  ['recursive doubling of a jsonb value', `WITH RECURSIVE r(j, n) AS (SELECT '1'::jsonb, 1 UNION ALL SELECT jsonb_build_array(j, j), n + 1 FROM r WHERE n < 40) SELECT max(n) FROM r`],
  ['recursive doubling of an array', `WITH RECURSIVE r(a, n) AS (SELECT ARRAY[1], 1 UNION ALL SELECT a || a, n + 1 FROM r WHERE n < 40) SELECT max(cardinality(a)) FROM r`],
];

describe('memory bounds of user SQL (issue 28, finding 4)', () => {
  test.each(BOMBS)('%s is stopped with 400 and says what was too large', async (_label, sql) => {
    const r = await h.sql(owner.token, ws.id, sql);
    expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(400);
    expect(r.body.code).toBe('EXECUTION_ERROR');
    expect(r.body.error).toMatch(BOUNDED);
    const peak = await backendPeak();
    if (peak !== undefined) expect(peak).toBeLessThan(PEAK_LIMIT_BYTES);
  });

  test('subscripts of assignment targets are bounded (a jsonb array is padded with nulls up to one)', async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE docs (j jsonb, a int[])');
    await h.allowAll(owner.token, ws.id, [owner.id], ['docs']);
    await h.sqlOk(owner.token, ws.id, `INSERT INTO docs (j, a) VALUES ('[]', '{}')`);
    for (const sql of [
      `UPDATE docs SET j['100000000'] = '1'`,
      `UPDATE docs SET j[100000000] = '1'`,
      `UPDATE docs SET a[1:2000000] = '{}'`,
      `INSERT INTO docs (j[2000000]) VALUES ('1')`,
    ]) {
      const r = await h.sql(owner.token, ws.id, sql);
      expect(r.status, sql).toBe(400);
      expect(r.body.error).toMatch(/subscripts assigned to may be at most 1000000/);
    }
    await h.sqlOk(owner.token, ws.id, `UPDATE docs SET j['2'] = '1', a[1] = 7`);
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT j, a FROM docs')).rows).toEqual([{ j: [null, null, 1], a: [7] }]);
    const peak = await backendPeak();
    if (peak !== undefined) expect(peak).toBeLessThan(PEAK_LIMIT_BYTES);
  });

  test('temporary files end the statement at temp_file_limit', async () => {
    // generate_series in FROM is kept in a tuplestore, which spills to a temporary file past work_mem.
    const r = await h.sql(owner.token, ws.id, 'SELECT count(*) FROM generate_series(1, 1000000000)');
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('The statement needed more temporary disk space than one statement may use');
  });

  test('four bombs at once from one workspace are all stopped, and the backends stay bounded', async () => {
    const sql = BOMBS.filter(([label]) => ['format width', 'string_agg', 'array_agg', 'ARRAY(subquery)'].includes(label)).map(([, s]) => s);
    const answers = await Promise.all(sql.map((s) => h.sql(owner.token, ws.id, s)));
    for (const r of answers) {
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(BOUNDED);
    }
    const peak = await backendPeak();
    if (peak !== undefined) expect(peak).toBeLessThan(PEAK_LIMIT_BYTES);
  });

  test('a template of the same shape is checked at run time too (its constants are parameters)', async () => {
    const small = await h.sql(owner.token, ws.id, `SELECT length(format('%5s', 'x')) AS n`);
    expect(small.body.rows).toEqual([{ n: 5 }]);
    for (let i = 0; i < 2; i++) {
      const r = await h.sql(owner.token, ws.id, `SELECT length(format('%600000000s', 'x')) AS n`);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(BOUNDED);
    }
    const agg = await h.sql(owner.token, ws.id, `SELECT length(string_agg(g::text, '-')) AS n FROM generate_series(1, 3) g`);
    expect(agg.body.rows).toEqual([{ n: 5 }]);
    const big = await h.sql(owner.token, ws.id, `SELECT length(string_agg(g::text, '${' '.repeat(5000)}')) AS n FROM generate_series(1, 100000) g`);
    expect(big.status).toBe(400);
    expect(big.body.error).toMatch(BOUNDED);
  });

  test('what stays within the bounds answers as before, with the same column names', async () => {
    const r = await h.sql(
      owner.token,
      ws.id,
      `SELECT format('%3s|%-3s|%%|%1$s|%1$s', 'a', 'b'), replace('abc', 'b', 'xx'), regexp_replace('abcb', 'b', '<\\&>', 'g'),
              regexp_replace('aaa', '(a)', '\\1\\1'), length(format('%1000000s', '')) AS wide`,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.rows).toEqual([{ format: '  a|b  |%|a|a', replace: 'axxc', regexp_replace: 'aaaa', wide: 1_000_000 }]);
    const agg = await h.sql(
      owner.token,
      ws.id,
      `SELECT string_agg(DISTINCT g::text, ',' ORDER BY g::text) FILTER (WHERE g > 1 AND g < 5) AS s, array_agg(g ORDER BY g DESC) AS a,
              jsonb_object_agg('k' || g, g) AS o, cardinality(ARRAY(SELECT 'x' FROM generate_series(1, 3) UNION ALL VALUES ('y'))) AS n
         FROM generate_series(1, 5) g`,
    );
    expect(agg.status, JSON.stringify(agg.body)).toBe(200);
    expect(agg.body.rows).toEqual([{ s: '2,3,4', a: [5, 4, 3, 2, 1], o: { k1: 1, k2: 2, k3: 3, k4: 4, k5: 5 }, n: 4 }]);
    const rec = await h.sql(
      owner.token,
      ws.id,
      `WITH RECURSIVE r(s, n) AS (SELECT 'x', 1 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 10) SELECT max(length(s)) AS longest FROM r`,
    );
    expect(rec.body.rows).toEqual([{ longest: 512 }]);
    const starred = await h.sql(owner.token, ws.id, `SELECT ARRAY(SELECT * FROM (SELECT g FROM generate_series(1, 3) g ORDER BY g DESC) s) AS a`);
    expect(starred.body.rows).toEqual([{ a: [3, 2, 1] }]);
    const two = await h.sql(owner.token, ws.id, `SELECT ARRAY(SELECT * FROM (SELECT 1, 2) s)`);
    expect(two.body.error).toBe('subquery must return only one column');
    // 200 000 small values: the sampled charge lets an ordinary aggregate through.
    const many = await h.sql(owner.token, ws.id, `SELECT cardinality(array_agg(g)) AS n FROM generate_series(1, 200000) g`);
    expect(many.body.rows).toEqual([{ n: 200000 }]);
  });

  test('hostile text in what the bounds wrap (format strings, replace arguments, delimiters, keys) stays text', async () => {
    // Quotes, comment openers, dollar quotes and tags, backslashes: every one is a value the wrapper passes on, never
    // SQL of its own. Each answer is the value itself, and nothing else ran (the table is still there, unchanged).
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE hostile (t text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['hostile']);
    await h.sqlOk(owner.token, ws.id, `INSERT INTO hostile (t) VALUES ('kept')`);
    const texts = [`x'); DROP TABLE hostile; --`, `/* x */ */ /*`, `-- x`, `$$`, `$t$ x $t$`, `\\' \\`, `%%s'`, `a"b`];
    const quoted = (t: string) => `'${t.replaceAll("'", "''")}'`;
    const dollar = (t: string) => `$q$${t}$q$`;
    for (const t of texts) {
      for (const lit of [quoted(t), dollar(t)]) {
        const sql = `SELECT format(${lit} || '%s', ${lit}) AS f, replace(${lit}, 'x', ${lit}) AS r, regexp_replace(${lit}, '^', ${lit}) AS g,
                string_agg(v, ${lit}) AS s, jsonb_object_agg(${lit} || v, ${lit}) AS o, (SELECT count(*) FROM hostile) AS n
           FROM (VALUES ('1'), ('2')) AS x(v)`;
        const r = await h.sql(owner.token, ws.id, sql);
        expect(r.status, `${sql}: ${JSON.stringify(r.body).slice(0, 300)}`).toBe(200);
        const want = await service.query(`SELECT format($1 || '%s', $1::text) AS f, replace($1, 'x', $1) AS r, regexp_replace($1, '^', $1) AS g`, [t]);
        expect(r.body.executed_sql).toMatch(/wds_format_spec[\s\S]*user_data\.replace[\s\S]*wds_collect/);
        const [row] = r.body.rows;
        expect({ f: row.f, r: row.r, g: row.g }).toEqual(want.rows[0]);
        expect(row.s).toBe(`1${t}2`);
        expect(row.o).toEqual({ [`${t}1`]: t, [`${t}2`]: t });
        expect(row.n).toBe(1);
      }
    }
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT t FROM hostile')).rows).toEqual([{ t: 'kept' }]);
  });

  test('workspace roles sort, hash and spill within their settings, existing roles included', async () => {
    const role = workspaceRole(ws.id);
    const settings = async () => {
      const { rows } = await service.query<{ setconfig: string[] }>(
        'SELECT s.setconfig FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = $1',
        [role],
      );
      return rows.flatMap((r) => r.setconfig);
    };
    expect(await settings()).toEqual(expect.arrayContaining(['work_mem=8MB', 'hash_mem_multiplier=1', 'temp_file_limit=1GB']));
    // A role made before these settings existed: the next process brings it up to date before its first connection.
    await service.query(`ALTER ROLE "${role}" RESET ALL`);
    const other = await Harness.create({}, h.url);
    try {
      const r = await other.sql(owner.token, ws.id, `SELECT 1 AS one`);
      expect(r.body.rows).toEqual([{ one: 1 }]);
    } finally {
      await other.close();
    }
    expect(await settings()).toEqual(expect.arrayContaining(['work_mem=8MB', 'hash_mem_multiplier=1', 'temp_file_limit=1GB']));
  });
});
