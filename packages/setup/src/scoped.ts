/**
 * The queries the per-workspace setup lists share (prompt rules, skills, chat templates): a page oldest first, one
 * row by id, delete by id — always within the workspace, a malformed id being the same NOT_FOUND as a missing one.
 */
import type { Database, Db, Uuid } from '@wds/db';
import { notFound } from '@wds/errors';
import type { Selectable } from 'kysely';
import type { Page } from './limits.js';

type ScopedTable = 'platform.prompt_rules' | 'platform.skills' | 'platform.chat_templates';
type Row<T extends ScopedTable> = Selectable<Database[T]>;

export async function listScoped<T extends ScopedTable>(db: Db, table: T, workspaceId: string, page: Page): Promise<Row<T>[]> {
  const rows = await db
    .selectFrom(table as ScopedTable)
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows as Row<T>[];
}

export async function getScoped<T extends ScopedTable>(db: Db, table: T, workspaceId: string, id: Uuid, what: string): Promise<Row<T>> {
  const row = await db.selectFrom(table as ScopedTable).selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw notFound(what);
  return row as Row<T>;
}

export async function deleteScoped<T extends ScopedTable>(db: Db, table: T, workspaceId: string, id: Uuid, what: string): Promise<Row<T>> {
  const row = await db.deleteFrom(table as ScopedTable).where('id', '=', id).where('workspace_id', '=', workspaceId).returningAll().executeTakeFirst();
  if (!row) throw notFound(what);
  return row as Row<T>;
}

/** The fields of a patch that were given. */
export const defined = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
