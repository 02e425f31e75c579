import { type Kysely, sql } from 'kysely';

/**
 * Workspaces by creator: the creator is whose share of the service a workspace's load takes, and how many
 * workspaces one user has created is checked on each creation (MAX_WORKSPACES_PER_USER) and counted when a workflow
 * run is queued (its priority is minus its creator's queued and running runs).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX workspaces_created_by_idx ON platform.workspaces (created_by)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX platform.workspaces_created_by_idx`.execute(db);
}
