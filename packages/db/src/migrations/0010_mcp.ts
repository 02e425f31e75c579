import { type Kysely, sql } from 'kysely';

/**
 * The MCP interface (issue 15): an audit entry records which transport the operation came through — `http` for
 * `/api/v1`, `mcp` for a tool call — and stays null for work the service did on its own (entries from before).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE platform.audit_logs ADD COLUMN transport text CHECK (transport IN ('http', 'mcp'));
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE platform.audit_logs DROP COLUMN transport`.execute(db);
}
