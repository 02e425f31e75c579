import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createDatabase, dropDatabase } from '../src/index.js';

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

const databaseName = (url: string) => new URL(url).pathname.slice(1);

describe('createDatabase', () => {
  const serverUrl = inject('pgServerUrl');

  it('creates uniquely named empty databases and drops them even while connected', async () => {
    const [a, b] = await Promise.all([createDatabase(serverUrl), createDatabase(serverUrl, { prefix: 'My-Pkg' })]);
    expect(databaseName(a)).toMatch(/^test_[a-z0-9]+_[0-9a-f]{8}$/);
    expect(databaseName(b)).toMatch(/^my_pkg_/);
    expect(await query(a, 'SELECT current_database() AS db')).toEqual([{ db: databaseName(a) }]);

    const held = new pg.Client({ connectionString: a });
    await held.connect();
    held.on('error', () => {});
    await Promise.all([dropDatabase(a), dropDatabase(b)]);
    await held.end().catch(() => {});
    const left = await query(serverUrl, 'SELECT datname FROM pg_database');
    expect(left.map((row) => row.datname)).not.toContain(databaseName(a));
    expect(left.map((row) => row.datname)).not.toContain(databaseName(b));
  });

  it('copies a template database', async () => {
    const templateUrl = await createDatabase(serverUrl, { prefix: 'template' });
    await query(templateUrl, "CREATE TABLE seeded (name text); INSERT INTO seeded VALUES ('from template')");

    const copies = await Promise.all(
      [1, 2, 3].map(() => createDatabase(serverUrl, { template: databaseName(templateUrl) })),
    );
    try {
      for (const copy of copies) {
        expect(await query(copy, 'SELECT name FROM seeded')).toEqual([{ name: 'from template' }]);
      }
      await query(copies[0]!, 'TRUNCATE seeded');
      expect(await query(copies[1]!, 'SELECT count(*)::int AS n FROM seeded')).toEqual([{ n: 1 }]);
    } finally {
      await Promise.all([...copies, templateUrl].map(dropDatabase));
    }
  });
});
