import '@wds/testkit';
import { createDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MAX_PREPARED_PER_CONNECTION, runCappedRead } from '../src/capped-read.js';

let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: await createDatabase(inject('pgServerUrl'), { prefix: 'wsql_capped' }) });
  await client.connect();
  // Were the rows of a billion-row series produced, this would take minutes, not a statement timeout's 5 s.
  await client.query('SET statement_timeout = 5000');
});
afterAll(async () => {
  await client?.end();
});

describe('runCappedRead', () => {
  it('reads at most the cap plus one row, then the server stops; the connection is ready for the next query', async () => {
    const r = await runCappedRead(client, 'SELECT generate_series(1, 1000000000) AS g', 10);
    expect(r.rows.map((x) => x.g)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    const under = await runCappedRead(client, 'SELECT g FROM generate_series(1, 3) g', 10);
    expect(under.rows).toHaveLength(3);
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('runs one statement only, outside any transaction, and reports errors without breaking the connection', async () => {
    await expect(runCappedRead(client, 'SELECT 1; SELECT 2', 10)).rejects.toThrow(/multiple commands|cannot insert multiple/);
    await expect(runCappedRead(client, 'SELECT 1/0', 10)).rejects.toThrow(/division by zero/);
    expect((await client.query('SELECT txid_current_if_assigned() IS NULL AS none')).rows[0].none).toBe(true);
    expect((await runCappedRead(client, 'SELECT 42 AS n', 10)).rows).toEqual([{ n: 42 }]);
  });

  it('as a prepared statement: typed parameters, the row cap, and at most MAX_PREPARED_PER_CONNECTION kept', async () => {
    await client.query('SET default_transaction_read_only = on');
    const prepared = (i: number) => ({ name: `t_${i}`, values: [String(i), 'x'], parameterTypes: [23, 0] });
    // A set-returning function in the select list streams (in FROM it would be materialized whole first).
    const text = 'SELECT g, $1 + 1 AS next, $2 || g AS label FROM (SELECT generate_series(1, 1000000000) AS g) s';
    const r = await runCappedRead(client, text, 2, undefined, prepared(1));
    expect(r.rows).toEqual([
      { g: 1, next: 2, label: 'x1' },
      { g: 2, next: 2, label: 'x2' },
      { g: 3, next: 2, label: 'x3' },
    ]);
    const count = async () => Number((await client.query('SELECT count(*) AS n FROM pg_prepared_statements')).rows[0].n);
    for (let i = 2; i <= MAX_PREPARED_PER_CONNECTION + 5; i++) await runCappedRead(client, text, 0, undefined, prepared(i));
    expect(await count()).toBeLessThanOrEqual(MAX_PREPARED_PER_CONNECTION);
    // The same name again is only bound and executed; a forgotten one is parsed again.
    expect((await runCappedRead(client, text, 0, undefined, prepared(MAX_PREPARED_PER_CONNECTION + 5))).rows).toHaveLength(1);
    expect((await runCappedRead(client, text, 0, undefined, prepared(1))).rows).toEqual([{ g: 1, next: 2, label: 'x1' }]);
    await client.query('SET default_transaction_read_only = off');
  });
});
