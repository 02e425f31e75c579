import type { Database } from './schema.js';
import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
import * as m0001 from './migrations/0001_foundation.js';
import * as m0002 from './migrations/0002_sql_and_policies.js';
import * as m0003 from './migrations/0003_stfs.js';
import * as m0004 from './migrations/0004_workflows_and_effects.js';
import * as m0005 from './migrations/0005_content.js';
import * as m0006 from './migrations/0006_embeddings.js';
import * as m0007 from './migrations/0007_drive_sync.js';
import * as m0008 from './migrations/0008_sql_walls.js';
import * as m0009 from './migrations/0009_nothing_left_behind.js';
import * as m0010 from './migrations/0010_mcp.js';
import * as m0011 from './migrations/0011_embedding_generations.js';
import * as m0012 from './migrations/0012_workflow_runs_async.js';
import * as m0013 from './migrations/0013_workflow_schedules.js';
import * as m0014 from './migrations/0014_workflow_hooks.js';
import * as m0015 from './migrations/0015_workflow_triggers.js';
import * as m0016 from './migrations/0016_row_changes.js';
import * as m0017 from './migrations/0017_row_capture_hardening.js';
import * as m0018 from './migrations/0018_workspace_creators.js';
import * as m0019 from './migrations/0019_accepted_versions.js';
import * as m0020 from './migrations/0020_memory_bounds.js';
import * as m0021 from './migrations/0021_effects_once.js';
import * as m0022 from './migrations/0022_audit_in_transaction.js';
import * as m0023 from './migrations/0023_audit_writer.js';
import * as m0024 from './migrations/0024_sql_proposals.js';
import * as m0025 from './migrations/0025_login_links.js';
import * as m0026 from './migrations/0026_run_step_data.js';

/** Migrations are listed here, in order; the Migrator records which ran in platform.kysely_migration. */
const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_sql_and_policies': m0002,
  '0003_stfs': m0003,
  '0004_workflows_and_effects': m0004,
  '0005_content': m0005,
  '0006_embeddings': m0006,
  '0007_drive_sync': m0007,
  '0008_sql_walls': m0008,
  '0009_nothing_left_behind': m0009,
  '0010_mcp': m0010,
  '0011_embedding_generations': m0011,
  '0012_workflow_runs_async': m0012,
  '0013_workflow_schedules': m0013,
  '0014_workflow_hooks': m0014,
  '0015_workflow_triggers': m0015,
  '0016_row_changes': m0016,
  '0017_row_capture_hardening': m0017,
  '0018_workspace_creators': m0018,
  '0019_accepted_versions': m0019,
  '0020_memory_bounds': m0020,
  '0021_effects_once': m0021,
  '0022_audit_in_transaction': m0022,
  '0023_audit_writer': m0023,
  '0024_sql_proposals': m0024,
  '0025_login_links': m0025,
  '0026_run_step_data': m0026,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

export async function migrateToLatest(kysely: Kysely<Database>): Promise<string[]> {
  const db = kysely as unknown as Kysely<unknown>;
  await db.schema.createSchema('platform').ifNotExists().execute();
  const migrator = new Migrator({ db, provider, migrationTableSchema: 'platform' });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
