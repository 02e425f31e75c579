import '@wds/testkit';
import { type Db, createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import type pg from 'pg';
import { inject } from 'vitest';

/** A fresh, migrated database on the test PostgreSQL server. */
export async function openTestDb(): Promise<Db> {
  return (await openTestDatabase()).db;
}

/** A fresh, migrated database, with the pool under `db` and the URL (for a second connection, as another process). */
export async function openTestDatabase(): Promise<{ db: Db; pool: pg.Pool; url: string }> {
  const url = await createDatabase(inject('pgServerUrl'), { prefix: 'emb' });
  const { db, pool } = createDb(url, { max: 6 });
  await migrateToLatest(db);
  return { db, pool, url };
}

export async function newWorkspace(db: Db): Promise<string> {
  const id = newId();
  await db.insertInto('platform.workspaces').values({ id, name: `ws ${id}` }).execute();
  return id;
}

export async function newFile(db: Db, workspaceId: string, filename = 'notes.txt'): Promise<string> {
  const id = newId();
  await db
    .insertInto('platform.files')
    .values({
      id,
      workspace_id: workspaceId,
      filename,
      content_type: 'text/plain',
      size: 1,
      sha256: '00',
      blob_key: `blobs/${id}`,
      metadata: '{}',
      created_by: null,
    })
    .execute();
  return id;
}
