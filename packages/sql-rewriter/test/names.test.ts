import type { Node } from '@pgsql/types';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyze, isLogicalName, LOGICAL_NAME, loadParser, MAX_LOGICAL_LENGTH, physicalName, rewrite } from '../src/index.js';
import { checkCollationName, checkFunctionName, checkOpclassName, checkOperatorName, checkTypeName } from '../src/qualified-names.js';
import { columns } from './catalog.js';

const names = (...parts: string[]): Node[] => parts.map((sval) => ({ String: { sval } }));
const code = (fn: () => void): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code ?? 'plain error';
  }
};

beforeAll(loadParser);

describe('qualified names resolve to allow-listed system objects only', () => {
  it('types', () => {
    const type = (parts: string[], extra: object = {}, column = false) => code(() => checkTypeName({ names: names(...parts), ...extra }, column));
    expect(type(['pg_catalog', 'int4'])).toBeUndefined();
    expect(type(['_int4'])).toBeUndefined();
    expect(type(['pg_catalog', '_text'])).toBeUndefined();
    expect(type(['jsonb'], { arrayBounds: [{ Integer: { ival: -1 } }] })).toBeUndefined();
    for (const t of ['_regclass', '_regrole', '_oid', '_aclitem', 'regclass', 'oid', 'pg_class', 'ws_x_t', '_ws_x_t', '__int4', 'aclitem', 'txid_snapshot', 'pg_lsn']) {
      expect(type([t]), t).toBe('UNSUPPORTED');
      expect(type(['pg_catalog', t]), `pg_catalog.${t}`).toBe('UNSUPPORTED');
    }
    expect(type(['public', 'int4'])).toBe('SCHEMA_ACCESS_DENIED');
    expect(type(['a', 'b', 'int4'])).toBe('SCHEMA_ACCESS_DENIED');
    expect(type(['int4'], { pct_type: true })).toBe('UNSUPPORTED');
    expect(type(['int4'], { setof: true })).toBe('UNSUPPORTED');
    expect(type(['int4'], { typeOid: 2205 })).toBe('UNSUPPORTED');
    // serial only where PostgreSQL expands it: an unqualified column type without array bounds.
    expect(type(['serial'], {}, true)).toBeUndefined();
    expect(type(['serial'])).toBe('UNSUPPORTED');
    expect(type(['pg_catalog', 'serial'], {}, true)).toBe('UNSUPPORTED');
    expect(type(['serial'], { arrayBounds: [{ Integer: { ival: -1 } }] }, true)).toBe('UNSUPPORTED');
    expect(type(['_serial'], {}, true)).toBe('UNSUPPORTED');
  });

  it('operators', () => {
    expect(code(() => checkOperatorName(names('=')))).toBeUndefined();
    expect(code(() => checkOperatorName(names('pg_catalog', '&&')))).toBeUndefined();
    expect(code(() => checkOperatorName(undefined))).toBeUndefined();
    expect(code(() => checkOperatorName(names('public', '=')))).toBe('SCHEMA_ACCESS_DENIED');
    expect(code(() => checkOperatorName(names('x', 'pg_catalog', '=')))).toBe('SCHEMA_ACCESS_DENIED');
    expect(code(() => checkOperatorName([{ A_Star: {} }]))).toBe('UNSUPPORTED');
  });

  it('collations', () => {
    for (const c of ['C', 'POSIX', 'default', 'ucs_basic']) {
      expect(code(() => checkCollationName(names(c)))).toBeUndefined();
      expect(code(() => checkCollationName(names('pg_catalog', c)))).toBeUndefined();
    }
    expect(code(() => checkCollationName(names('c')))).toBe('UNSUPPORTED');
    expect(code(() => checkCollationName(names('en_US')))).toBe('UNSUPPORTED');
    expect(code(() => checkCollationName(names('public', 'C')))).toBe('SCHEMA_ACCESS_DENIED');
  });

  it('operator classes', () => {
    for (const c of ['text_pattern_ops', 'varchar_pattern_ops', 'bpchar_pattern_ops', 'jsonb_ops', 'jsonb_path_ops', 'tsvector_ops', 'int4_ops', 'timestamptz_minmax_ops', 'range_ops', 'array_ops']) {
      expect(code(() => checkOpclassName(names(c))), c).toBeUndefined();
    }
    expect(code(() => checkOpclassName(names('oid_ops')))).toBe('UNSUPPORTED');
    expect(code(() => checkOpclassName(names('gin_trgm_ops')))).toBe('UNSUPPORTED');
    expect(code(() => checkOpclassName(names('pg_catalog', 'text_ops')))).toBe('UNSUPPORTED');
    expect(code(() => checkOpclassName(names('public', 'text_ops')))).toBe('SCHEMA_ACCESS_DENIED');
  });

  it('functions keep the allow-list and the pg_catalog rule', () => {
    expect(code(() => checkFunctionName(names('lower')))).toBeUndefined();
    expect(code(() => checkFunctionName(names('pg_catalog', 'lower')))).toBeUndefined();
    expect(code(() => checkFunctionName(names('user_data', 'lower')))).toBe('UNSUPPORTED');
    for (const f of ['nextval', 'setval', 'currval', 'pg_read_file', 'set_config', 'lo_import', 'query_to_xml', 'xpath']) {
      expect(code(() => checkFunctionName(names(f))), f).toBe('UNSUPPORTED');
    }
  });
});

describe('CTE names are never mapped; everything else is', () => {
  const tables = (sql: string) => analyze(sql).refs.map((r) => `${r.role}:${r.table}`);

  it('a CTE reference is not a table reference, with PostgreSQL scoping', () => {
    expect(tables('WITH x AS (SELECT * FROM orders) SELECT * FROM x')).toEqual(['read:orders']);
    // Non-recursive: a CTE does not see itself or later CTEs, so the inner name is a table.
    expect(tables('WITH orders AS (SELECT * FROM orders) SELECT * FROM orders')).toEqual(['read:orders']);
    expect(tables('WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a')).toEqual(['read:b']);
    expect(tables('WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a')).toEqual([]);
    // An inner WITH shadows only inside its own query.
    expect(tables('SELECT * FROM (WITH items AS (SELECT 1) SELECT * FROM items) s, items')).toEqual(['read:items']);
    // A write target always names a table, also when a CTE has its name.
    expect(tables('WITH items AS (SELECT 1 AS id) DELETE FROM items WHERE id IN (SELECT id FROM items)')).toEqual(['delete:items']);
  });
});

describe('physical names of workspace objects', () => {
  const ws = '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee';
  const other = '0190aaaa-bbbb-7ccc-8ddd-ffffffffffff';
  it('keeps table names to what fits PostgreSQL after the prefix (23), as written', () => {
    expect(physicalName(ws, 'reconciling_items')).toBe('ws_0190aaaa_bbbb_7ccc_8ddd_eeeeeeeeeeee_reconciling_items');
    expect(code(() => physicalName(ws, 'a'.repeat(24)))).toBe('INVALID_TABLE');
    expect(isLogicalName('a'.repeat(24))).toBe(false);
  });

  it('states the table-name rule once: LOGICAL_NAME (what valibot schemas use) is isLogicalName for tables', () => {
    const good = ['a', '_', 'tickets', 'a1_b2', 'x'.repeat(MAX_LOGICAL_LENGTH)];
    const bad = ['', '1a', 'A', 'Tickets', 'a-b', 'a b', 'a.b', 'é', 'x'.repeat(MAX_LOGICAL_LENGTH + 1), 'a\n'];
    for (const name of good) expect([isLogicalName(name), LOGICAL_NAME.test(name)], name).toEqual([true, true]);
    for (const name of bad) expect([isLogicalName(name), LOGICAL_NAME.test(name)], name).toEqual([false, false]);
  });

  it('lets index and constraint names be as long as PostgreSQL allows, mapped to a digest that fits', () => {
    const long = 'idx_account_balances_account';
    const p = physicalName(ws, long, 'index');
    expect(p.length).toBeLessThanOrEqual(63);
    expect(p).toMatch(/^ws_0190aaaa_bbbb_7ccc_8ddd_eeeeeeeeeeee_idx_account_ba_[0-9a-f]{8}$/);
    // The same name always maps to the same physical name (CREATE, then DROP, agree); names sharing a beginning do not
    // meet; another workspace's is another.
    expect(physicalName(ws, long, 'index')).toBe(p);
    expect(physicalName(ws, 'idx_account_balances_period', 'index')).not.toBe(p);
    expect(physicalName(other, long, 'index')).not.toBe(p);
    expect(physicalName(ws, 'x'.repeat(63), 'constraint').length).toBeLessThanOrEqual(63);
    expect(code(() => physicalName(ws, 'x'.repeat(64), 'index'))).toBe('INVALID_TABLE');
    // A name spelling a workspace prefix is never a logical name.
    expect(isLogicalName('ws_0190aaaa_bbbb_7ccc_8ddd_eeeeeeeeeeee_items_pkey', 'constraint')).toBe(false);
  });

  it('refuses hostile index and constraint names in every place they are mapped (quotes, comment openers, $$)', () => {
    const catalog = new Map([['t', columns(['id', 'x'])]]);
    const run = (sql: string) => code(() => rewrite(analyze(sql), { workspaceId: ws, catalog }));
    for (const bad of [`a'b`, 'a"b', 'a/*b', 'a--b', 'a$$b', '$q$x$q$', 'A', 'a b', `${'x'.repeat(40)}'`, 'ws_0190aaaa_bbbb_7ccc_8ddd_ffffffffffff_t_pkey']) {
      const q = `"${bad.replaceAll('"', '""')}"`;
      for (const sql of [
        `CREATE INDEX ${q} ON t (x)`,
        `DROP INDEX ${q}`,
        `CREATE TABLE u (id int, CONSTRAINT ${q} UNIQUE (id))`,
        `ALTER TABLE t ADD CONSTRAINT ${q} UNIQUE (x)`,
        `INSERT INTO t (id) VALUES (1) ON CONFLICT ON CONSTRAINT ${q} DO NOTHING`,
      ]) {
        expect(run(sql), sql).toMatch(/INVALID_TABLE|SCHEMA_ACCESS_DENIED|UNSUPPORTED/);
      }
    }
  });

  it('prints a long name as a plain identifier that re-parses to the analysed statement (rewrite verifies it)', () => {
    const catalog = new Map([['t', columns(['id', 'x'])]]);
    const long = `idx_${'a_'.repeat(29)}z`; // 63 characters
    const sql = rewrite(analyze(`CREATE INDEX ${long} ON t (x)`), { workspaceId: ws, catalog });
    expect(sql).toContain(physicalName(ws, long, 'index'));
    expect(sql).not.toMatch(/["'$]/);
  });

  it('rewrites CREATE INDEX, DROP INDEX and ON CONFLICT ON CONSTRAINT with the same long name alike', () => {
    const catalog = new Map([['journal_entries', columns(['id', 'status'])]]);
    const rewriteSql = (sql: string) => rewrite(analyze(sql), { workspaceId: ws, catalog });
    const created = rewriteSql('CREATE INDEX idx_journal_entries_status ON journal_entries (status)');
    const dropped = rewriteSql('DROP INDEX idx_journal_entries_status');
    const physical = physicalName(ws, 'idx_journal_entries_status', 'index');
    expect(created).toContain(physical);
    expect(dropped).toContain(physical);
  });
});
