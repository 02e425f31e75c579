import '@wds/testkit';
import { createDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCappedRead } from '../src/capped-read.js';

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
});
