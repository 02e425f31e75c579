import '@wds/testkit';
import { createDatabase, createServiceRoleDatabase, dropDatabase } from '@wds/testkit';
import { describe, expect, inject, it } from 'vitest';
import { createDb, migrateToLatest, sql } from '../src/index.js';
import * as m0019 from '../src/migrations/0019_accepted_versions.js';
import * as m0020 from '../src/migrations/0020_memory_bounds.js';
import * as m0021 from '../src/migrations/0021_effects_once.js';
import * as m0022 from '../src/migrations/0022_audit_in_transaction.js';
import * as m0023 from '../src/migrations/0023_audit_writer.js';
import * as m0024 from '../src/migrations/0024_sql_proposals.js';
import * as m0025 from '../src/migrations/0025_login_links.js';
import * as m0026 from '../src/migrations/0026_run_step_data.js';

describe('migrateToLatest', () => {
  it('creates the platform and user_data schemas once; a second run applies nothing', async () => {
    const url = await createDatabase(inject('pgServerUrl'), { prefix: 'migrate' });
    const { db } = createDb(url, { max: 2 });
    try {
      expect(await migrateToLatest(db)).toEqual(['0001_foundation', '0002_sql_and_policies', '0003_stfs', '0004_workflows_and_effects', '0005_content', '0006_embeddings', '0007_drive_sync', '0008_sql_walls', '0009_nothing_left_behind', '0010_mcp', '0011_embedding_generations', '0012_workflow_runs_async', '0013_workflow_schedules', '0014_workflow_hooks', '0015_workflow_triggers', '0016_row_changes', '0017_row_capture_hardening', '0018_workspace_creators', '0019_accepted_versions', '0020_memory_bounds', '0021_effects_once', '0022_audit_in_transaction', '0023_audit_writer', '0024_sql_proposals', '0025_login_links', '0026_run_step_data']);
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

  it('0019: existing workflows keep what their automation ran: the newest version as of the upgrade, or with a row trigger the named one', async () => {
    const url = await createDatabase(inject('pgServerUrl'), { prefix: 'migrate' });
    const { db } = createDb(url, { max: 2 });
    try {
      await migrateToLatest(db);
      // As before 0019: its columns gone, its record too (and the later ones'), so the next migrateToLatest runs it
      // over existing rows.
      await m0026.down(db as never);
      await m0025.down(db as never);
      await m0024.down(db as never);
      await m0023.down(db as never);
      await m0022.down(db as never);
      await m0021.down(db as never);
      await m0020.down(db as never);
      await m0019.down(db as never);
      await sql`DELETE FROM platform.kysely_migration WHERE name IN ('0019_accepted_versions', '0020_memory_bounds', '0021_effects_once', '0022_audit_in_transaction', '0023_audit_writer', '0024_sql_proposals', '0025_login_links', '0026_run_step_data')`.execute(db);
      const id = (n: number) => `01900000-0000-7000-8000-${String(n).padStart(12, '0')}`;
      for (const statement of [
        sql`INSERT INTO platform.users (id, email, name) VALUES (${id(1)}, 'o@x.io', 'o')`,
        sql`INSERT INTO platform.workspaces (id, name) VALUES (${id(2)}, 'w')`,
        sql`INSERT INTO platform.stfs (id, workspace_id, name) VALUES (${id(3)}, ${id(2)}, 's')`,
        sql`INSERT INTO platform.stf_versions (id, stf_id, workspace_id, version, runtime, code)
          VALUES (${id(4)}, ${id(3)}, ${id(2)}, '1', 'javascript', ''), (${id(5)}, ${id(3)}, ${id(2)}, '2', 'javascript', '')`,
        sql`INSERT INTO platform.effects (id, workspace_id, name) VALUES (${id(6)}, ${id(2)}, 'e')`,
        sql`INSERT INTO platform.effect_versions (id, effect_id, workspace_id, version, url, method, header_mappings, body_mappings, query_mappings)
          VALUES (${id(7)}, ${id(6)}, ${id(2)}, '1', 'https://a.example', 'POST', '[]', '[]', '[]'),
                 (${id(8)}, ${id(6)}, ${id(2)}, '2', 'https://a.example', 'POST', '[]', '[]', '[]')`,
        sql`INSERT INTO platform.workflows (id, workspace_id, name, definition) VALUES (${id(9)}, ${id(2)}, 'wf', ${JSON.stringify({
          input_schema: null,
          input_steps: [],
          stf_steps: [{ stf_version_id: id(4), input_mappings: [] }, { stf_version_id: id(4), pin_version: true, input_mappings: [] }],
          effect_steps: [{ effect_version_id: id(7), pin_version: false, input_mappings: [] }],
        })}::jsonb)`,
        sql`INSERT INTO platform.workflows (id, workspace_id, name, definition) SELECT ${id(14)}, workspace_id, 'rows', definition FROM platform.workflows WHERE id = ${id(9)}`,
        sql`INSERT INTO platform.workflow_schedules (id, workspace_id, workflow_id, name, cron, timezone, created_by, next_run_at)
          VALUES (${id(10)}, ${id(2)}, ${id(9)}, 's', '* * * * *', 'UTC', ${id(1)}, now())`,
        sql`INSERT INTO platform.workflow_hooks (id, workspace_id, workflow_id, name, secret_sealed, created_by)
          VALUES (${id(13)}, ${id(2)}, ${id(9)}, 'h', '\\x00'::bytea, ${id(1)})`,
        sql`INSERT INTO platform.workflow_triggers (id, workspace_id, workflow_id, name, event, table_name, created_by)
          VALUES (${id(11)}, ${id(2)}, ${id(9)}, 'f', 'file_uploaded', NULL, ${id(1)}), (${id(12)}, ${id(2)}, ${id(14)}, 'r', 'row_inserted', 't', ${id(1)})`,
      ]) {
        await statement.execute(db);
      }
      expect(await migrateToLatest(db)).toEqual(['0019_accepted_versions', '0020_memory_bounds', '0021_effects_once', '0022_audit_in_transaction', '0023_audit_writer', '0024_sql_proposals', '0025_login_links', '0026_run_step_data']);
      const newest = { stf: { [id(4)]: id(5) }, effect: { [id(7)]: id(8) } };
      const accepted = async (workflowId: string) =>
        (await sql<{ a: unknown }>`SELECT accepted_versions AS a FROM platform.workflows WHERE id = ${workflowId}`.execute(db)).rows[0]?.a;
      expect(await accepted(id(9))).toEqual(newest);
      expect(await accepted(id(14))).toEqual({ stf: {}, effect: {} });
    } finally {
      await db.destroy();
      await dropDatabase(url);
    }
  });

  it('as a service that is no superuser (a managed database): the row capture and audit functions are owned by their own roles', async () => {
    const { db } = createDb(await createServiceRoleDatabase(inject('pgServerUrl'), { prefix: 'wds_mig' }), { max: 2 });
    try {
      await migrateToLatest(db);
      const { rows } = await sql<{ owner: string; create: boolean }>`
        SELECT p.proowner::regrole::text AS owner, has_schema_privilege('wds_row_capture', 'user_data', 'CREATE') AS create
          FROM pg_proc p WHERE p.oid = 'user_data.wds_capture_rows()'::regprocedure`.execute(db);
      expect(rows[0]).toEqual({ owner: 'wds_row_capture', create: false });
      // The audit function too (0022, 0023): with the rights of a role that may only read the key and add entries.
      const audit = await sql<{ owner: string; create: boolean; insert: boolean; read: boolean; key: boolean }>`
        SELECT p.proowner::regrole::text AS owner, has_schema_privilege('wds_audit_writer', 'user_data', 'CREATE') AS create,
               has_table_privilege('wds_audit_writer', 'platform.audit_logs', 'INSERT') AS insert,
               has_table_privilege('wds_audit_writer', 'platform.audit_logs', 'SELECT') AS read,
               has_table_privilege('wds_audit_writer', 'platform.audit_key', 'SELECT') AS key
          FROM pg_proc p WHERE p.oid = 'user_data.wds_audit(text, text)'::regprocedure`.execute(db);
      expect(audit.rows[0]).toEqual({ owner: 'wds_audit_writer', create: false, insert: true, read: false, key: true });
    } finally {
      await db.destroy();
    }
  });
});
