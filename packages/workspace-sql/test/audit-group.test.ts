import '@wds/testkit';
import { createDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AuditGroup } from '../src/audit-group.js';

let pool: pg.Pool;
const statements: string[] = [];

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createDatabase(inject('pgServerUrl'), { prefix: 'wsql_audit' }), max: 2 });
  await pool.query('CREATE TABLE entries (n int CHECK (n >= 0))');
  // Counts the round trips the group makes.
  const query = pool.query.bind(pool) as (text: string) => Promise<unknown>;
  (pool as unknown as { query: (text: string) => Promise<unknown> }).query = (text: string) => {
    statements.push(text);
    return query(text);
  };
});
afterAll(async () => {
  await pool?.end();
});

describe('AuditGroup', () => {
  it('writes alone at once; entries arriving meanwhile share the next commit; each caller learns its own outcome', async () => {
    const group = new AuditGroup(pool, 'INSERT INTO entries VALUES');
    statements.length = 0;
    await group.write('(1)');
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain('SET LOCAL synchronous_commit = off');

    statements.length = 0;
    await Promise.all(Array.from({ length: 50 }, (_, i) => group.write(`(${i + 100})`)));
    // The first goes at once; the 49 that came while it was written go together.
    expect(statements).toHaveLength(2);
    expect((await pool.query('SELECT count(*)::int AS n FROM entries')).rows[0].n).toBe(51);
  });

  it('a failing entry fails only its own caller', async () => {
    const group = new AuditGroup(pool, 'INSERT INTO entries VALUES');
    const first = group.write('(1000)');
    const rest = [group.write('(1001)'), group.write('(-1)'), group.write('(1002)')];
    await first;
    const outcomes = await Promise.allSettled(rest);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const kept = await pool.query('SELECT n FROM entries WHERE n >= 1000 ORDER BY n');
    expect(kept.rows.map((r) => r.n)).toEqual([1000, 1001, 1002]);
  });

  it('flush waits for every entry handed in before it, also those retried alone, and for nothing after', async () => {
    const group = new AuditGroup(pool, 'INSERT INTO entries VALUES');
    expect(group.pending).toBe(0);
    await group.flush();
    const entries = [group.write('(2000)'), group.write('(2001)'), group.write('(-2)'), group.write('(2002)')].map((p) => p.catch(() => 'failed'));
    expect(group.pending).toBe(4);
    await group.flush();
    expect(group.pending).toBe(0);
    const kept = await pool.query('SELECT n FROM entries WHERE n >= 2000 ORDER BY n');
    expect(kept.rows.map((r) => r.n)).toEqual([2000, 2001, 2002]);
    expect(await Promise.all(entries)).toEqual([undefined, undefined, 'failed', undefined]);
  });
});
