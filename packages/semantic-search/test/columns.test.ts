import '@wds/testkit';
import { createDb, migrateToLatest, newId, sql } from '@wds/db';
import { createEmbedder } from '@wds/embeddings';
import { physicalName } from '@wds/sql-rewriter';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SearchEmbedder, columnStatus, generateColumn, jobKey } from '../src/index.js';
import { vectorText } from '../src/vectors.js';
import { withTable } from '../src/tables.js';

let db: ReturnType<typeof createDb>['db'];
let pool: ReturnType<typeof createDb>['pool'];
const ws = newId();
const changed: string[] = [];

beforeAll(async () => {
  ({ db, pool } = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'semantic' }), { max: 4 }));
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: ws, name: 'ws' }).execute();
  await sql.raw(`CREATE SCHEMA IF NOT EXISTS user_data;
    CREATE TABLE user_data."${physicalName(ws, 'notes')}" (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), body text, n int, deleted_at timestamptz);
    INSERT INTO user_data."${physicalName(ws, 'notes')}" (body, n) VALUES ('alpha beta', 1), ('gamma delta', 2), ('', 3), (NULL, 4);
    INSERT INTO user_data."${physicalName(ws, 'notes')}" (body, n, deleted_at) VALUES ('deleted text', 5, now());`).execute(db);
});
afterAll(async () => {
  await db?.destroy();
});

const deps = () => ({
  db,
  embedder: new SearchEmbedder(createEmbedder({ kind: 'hashing', dimensions: 16 })),
  pgvector: false,
  schemaChanged: async (id: string) => void changed.push(id),
  // The table here is the service's own (created above without a workspace role), so it writes it directly.
  writeAsWorkspace: async (_id: string, statements: { text: string; values?: unknown[] }[]) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      for (const s of statements) await client.query(s.text, s.values);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  },
});

// The table has no workspace role here, so status is asked as a caller who may run DDL: the whole table's counts
// (apps/api/test/embeddings.test.ts counts as members, through their policies).
const caller = { workspaceId: ws, ddlGroupId: null, isAdmin: true, subject: { kind: 'user' as const, userId: newId() } };
const statusDeps = () => ({
  db,
  sql: { mayRunDdl: async () => true, readScope: async () => 'every' as const, execute: async () => ({ kind: 'select' as const, tables: [], executed_sql: '' }) },
  limits: { statementTimeoutMs: 10_000, maxRows: 1000 },
});

describe('column embeddings on plain PostgreSQL', () => {
  it('embeds live rows with text only, once, and again when the text changes', async () => {
    expect(await generateColumn(deps(), ws, 'notes', 'body')).toEqual({ generated_count: 2, column_added: true, embedding_column: 'body_embedding' });
    expect(changed).toEqual([ws]);
    expect(await generateColumn(deps(), ws, 'notes', 'body')).toMatchObject({ generated_count: 0, column_added: false });
    const { rows } = await sql<{ v: number[] | null }>`SELECT body_embedding AS v FROM ${sql.raw(`user_data."${physicalName(ws, 'notes')}"`)} WHERE n = 1`.execute(db);
    expect(rows[0]?.v).toHaveLength(16);
    await sql`UPDATE ${sql.raw(`user_data."${physicalName(ws, 'notes')}"`)} SET body = 'epsilon' WHERE n = 2`.execute(db);
    expect((await columnStatus(statusDeps(), caller, 'notes')).columns[0]).toMatchObject({ total_rows: 2, embedded_rows: 1, pending_rows: 1 });
    expect(await generateColumn(deps(), ws, 'notes', 'body')).toMatchObject({ generated_count: 1 });
  });

  it('refuses non-text columns, unknown tables and a clashing column', async () => {
    await expect(generateColumn(deps(), ws, 'notes', 'n')).rejects.toThrow(/not text/);
    await expect(generateColumn(deps(), ws, 'missing', 'body')).rejects.toThrow(/does not exist/);
    await sql.raw(`ALTER TABLE user_data."${physicalName(ws, 'notes')}" ADD COLUMN title text, ADD COLUMN title_embedding int`).execute(db);
    await expect(generateColumn(deps(), ws, 'notes', 'title')).rejects.toThrow(/already exists/);
  });

  it('none is 503 EMBEDDING_NOT_CONFIGURED', async () => {
    await expect(generateColumn({ ...deps(), embedder: new SearchEmbedder(null) }, ws, 'notes', 'body')).rejects.toMatchObject({ code: 'EMBEDDING_NOT_CONFIGURED' });
  });
});

describe('helpers', () => {
  it('formats vectors for both storage kinds and keys jobs per table or file', () => {
    expect(vectorText([0.5, -1, Number.NaN], false)).toBe('{0.5,-1,0}');
    expect(vectorText([0.5, -1], true)).toBe('[0.5,-1]');
    expect(jobKey({ kind: 'table', workspaceId: 'w', table: 't' })).toBe('table:w:t');
    expect(jobKey({ kind: 'file', workspaceId: 'w', itemId: 'i' })).toBe('file:i');
  });
});

describe('reading a workspace table with the service\u2019s rights', () => {
  it('holds the table for the length of the read (nothing can be swapped in) and never reads a view', async () => {
    const notes = `user_data."${physicalName(ws, 'notes')}"`;
    const n = await withTable(db, ws, 'notes', async (trx, info) => {
      const other = await pool.connect();
      try {
        // PostgreSQL's own lock timeout, not a timing assertion: DROP needs the lock the read holds.
        await other.query(`SET lock_timeout = '50ms'`);
        await expect(other.query(`DROP TABLE ${notes}`)).rejects.toMatchObject({ code: '55P03' });
      } finally {
        other.release();
      }
      const { rows } = await sql<{ c: number }>`SELECT count(*)::int AS c FROM ${sql.raw(info.qualified)} t`.execute(trx);
      return rows[0]?.c;
    });
    expect(n).toBe(5);
    await sql.raw(`CREATE VIEW user_data."${physicalName(ws, 'looks_like')}" AS SELECT gen_random_uuid() AS id, 'x'::text AS body`).execute(db);
    await expect(withTable(db, ws, 'looks_like', async () => 'read')).rejects.toThrow(/does not exist/);
    await expect(withTable(db, ws, 'missing', async () => 'read')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});
