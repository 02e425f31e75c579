import '@wds/testkit';
import { createDatabase, createServiceRoleDatabase, dropDatabase } from '@wds/testkit';
import { describe, expect, inject, it } from 'vitest';
import { createDb, migrateToLatest, sql } from '../src/index.js';

describe('migrateToLatest', () => {
  it('creates the platform and user_data schemas once; a second run applies nothing', async () => {
    const url = await createDatabase(inject('pgServerUrl'), { prefix: 'migrate' });
    const { db } = createDb(url, { max: 2 });
    try {
      expect(await migrateToLatest(db)).toEqual(['0001_foundation', '0002_sql_and_policies', '0003_stfs', '0004_workflows_and_effects', '0005_content', '0006_embeddings', '0007_drive_sync', '0008_sql_walls', '0009_nothing_left_behind', '0010_mcp', '0011_embedding_generations', '0012_workflow_runs_async', '0013_workflow_schedules', '0014_workflow_hooks', '0015_workflow_triggers', '0016_row_changes', '0017_row_capture_hardening', '0018_memory_bounds']);
      expect(await migrateToLatest(db)).toEqual([]);
      const { rows } = await sql<{ nspname: string }>`
        SELECT nspname FROM pg_namespace WHERE nspname IN ('platform', 'user_data') ORDER BY 1`.execute(db);
      expect(rows.map((r) => r.nspname)).toEqual(['platform', 'user_data']);
      await db.insertInto('platform.users').values({ id: '01900000-0000-7000-8000-000000000001', email: 'A@x.io', name: 'a' }).execute();
      // Emails are unique without regard to case.
      await expect(
        db.insertInto('platform.users').values({ id: '01900000-0000-7000-8000-000000000002', email: 'a@X.io', name: 'b' }).execute(),
      ).rejects.toThrow(/users_email_key/);
    } finally {
      await db.destroy();
      await dropDatabase(url);
    }
  });

  it('as a service that is no superuser (a managed database): the row capture function is owned by its own role', async () => {
    const { db } = createDb(await createServiceRoleDatabase(inject('pgServerUrl'), { prefix: 'wds_mig' }), { max: 2 });
    try {
      await migrateToLatest(db);
      const { rows } = await sql<{ owner: string; create: boolean }>`
        SELECT p.proowner::regrole::text AS owner, has_schema_privilege('wds_row_capture', 'user_data', 'CREATE') AS create
          FROM pg_proc p WHERE p.oid = 'user_data.wds_capture_rows()'::regprocedure`.execute(db);
      expect(rows[0]).toEqual({ owner: 'wds_row_capture', create: false });
    } finally {
      await db.destroy();
    }
  });
});
