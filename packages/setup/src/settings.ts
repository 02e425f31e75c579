import { type Db, isUuid } from '@wds/db';
import { notFound } from '@wds/errors';

/** Whether the workspace shows its dashboard (pinned charts). Off by default. */
export async function getDashboardEnabled(db: Db, workspaceId: string): Promise<{ enabled: boolean }> {
  const row = isUuid(workspaceId)
    ? await db
        .selectFrom('platform.workspaces')
        .select('dashboard_enabled')
        .where('id', '=', workspaceId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst()
    : undefined;
  if (!row) throw notFound('Workspace');
  return { enabled: row.dashboard_enabled };
}

export async function setDashboardEnabled(db: Db, workspaceId: string, enabled: boolean): Promise<{ enabled: boolean }> {
  const row = isUuid(workspaceId)
    ? await db
        .updateTable('platform.workspaces')
        .set({ dashboard_enabled: enabled, updated_at: new Date() })
        .where('id', '=', workspaceId)
        .where('deleted_at', 'is', null)
        .returning('dashboard_enabled')
        .executeTakeFirst()
    : undefined;
  if (!row) throw notFound('Workspace');
  return { enabled: row.dashboard_enabled };
}
