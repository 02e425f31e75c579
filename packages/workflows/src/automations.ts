/**
 * What schedules, hooks and event triggers have in common: each belongs to one workflow of one workspace (reached
 * only through that workflow, so 404 for another workspace's), has a name and a `paused` flag, and runs as its owner
 * (`created_by`: its creator, or whoever changed it last).
 */
import type { Database, Db, Uuid } from '@wds/db';
import { notFound } from '@wds/errors';
import type { Selectable } from 'kysely';
import { type AUTOMATION_OF, getWorkflow } from './store.js';

export type AutomationTable = (typeof AUTOMATION_OF)[keyof typeof AUTOMATION_OF]['table'];

/** The rows of one kind of automation, by the workflow they belong to; `what` names it in a 404. */
export function automationRows<T extends AutomationTable>(table: T, what: string) {
  type Row = Selectable<Database[T]>;
  const t = table as AutomationTable;
  const ofWorkflow = (db: Db, workspaceId: string, workflowId: string) =>
    db.selectFrom(t).selectAll().where('workspace_id', '=', workspaceId).where('workflow_id', '=', workflowId);
  return {
    /** The workflow's, oldest first (404 for a workflow that is not the workspace's). */
    async list(db: Db, workspaceId: string, workflowId: Uuid, page: { limit: number; offset: number }): Promise<Row[]> {
      await getWorkflow(db, workspaceId, workflowId);
      return (await ofWorkflow(db, workspaceId, workflowId).orderBy('id').limit(page.limit).offset(page.offset).execute()) as Row[];
    },
    /** One of the workflow's; 404 otherwise. */
    async get(db: Db, workspaceId: string, workflowId: Uuid, id: Uuid): Promise<Row> {
      await getWorkflow(db, workspaceId, workflowId);
      const row = await ofWorkflow(db, workspaceId, workflowId).where('id', '=', id).executeTakeFirst();
      if (!row) throw notFound(what);
      return row as Row;
    },
    /** Renames or pauses one; whoever changes it owns it from then on. `more`: the kind's own fields. */
    async update(
      db: Db,
      id: string,
      patch: { name?: string | undefined; paused?: boolean | undefined },
      changedBy: string,
      more: Record<string, unknown> = {},
    ): Promise<Row> {
      const row = await db
        .updateTable(t)
        .set({
          ...more,
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.paused !== undefined ? { paused: patch.paused } : {}),
          created_by: changedBy,
          updated_at: new Date(),
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return row as Row;
    },
    /** Deletes one of the workflow's (404 otherwise); the row as it was. */
    async remove(db: Db, workspaceId: string, workflowId: Uuid, id: Uuid): Promise<Row> {
      const current = await this.get(db, workspaceId, workflowId, id);
      await db.deleteFrom(t).where('id', '=', id).execute();
      return current;
    },
  };
}
