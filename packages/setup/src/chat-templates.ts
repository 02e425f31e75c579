import { type ChatTemplateRow, type Db, newId, sql, type Uuid } from '@wds/db';
import { notFound } from '@wds/errors';
import { MAX_CHAT_TEMPLATE_CHARS, MAX_NAME_CHARS, type Page, checkText, iso } from './limits.js';
import { defined, deleteScoped, getScoped, listScoped } from './scoped.js';
import type { ChatTemplateView } from './views.js';

const view = (t: ChatTemplateRow): ChatTemplateView => ({
  id: t.id,
  workspace_id: t.workspace_id,
  name: t.name,
  content: t.content,
  is_active: t.is_active,
  created_by: t.created_by,
  created_at: iso(t.created_at),
  updated_at: iso(t.updated_at),
});

function check(t: { name?: string | undefined; content?: string | undefined }): void {
  if (t.name !== undefined) checkText('name', t.name, MAX_NAME_CHARS);
  if (t.content !== undefined) checkText('content', t.content, MAX_CHAT_TEMPLATE_CHARS);
}

/**
 * Serialises activations within a workspace for the rest of the caller's transaction: without it two concurrent
 * activations of different templates could both clear the old active one and then collide on the one-active index.
 */
const lockActivation = (db: Db, workspaceId: string) =>
  sql`SELECT pg_advisory_xact_lock(hashtextextended(${`chat_templates:${workspaceId}`}, 0))`.execute(db);

/** Oldest first. */
export async function listChatTemplates(db: Db, workspaceId: string, page: Page): Promise<ChatTemplateView[]> {
  return (await listScoped(db, 'platform.chat_templates', workspaceId, page)).map(view);
}

export async function getChatTemplate(db: Db, workspaceId: string, id: Uuid): Promise<ChatTemplateView> {
  return view(await getScoped(db, 'platform.chat_templates', workspaceId, id, 'Chat template'));
}

/** New templates are inactive; `activateChatTemplate` makes one the active one. */
export async function createChatTemplate(
  db: Db,
  workspaceId: string,
  input: { name: string; content: string; createdBy: string | null },
): Promise<ChatTemplateView> {
  check(input);
  const row = await db
    .insertInto('platform.chat_templates')
    .values({ id: newId(), workspace_id: workspaceId, name: input.name, content: input.content, created_by: input.createdBy })
    .returningAll()
    .executeTakeFirstOrThrow();
  return view(row);
}

export async function updateChatTemplate(
  db: Db,
  workspaceId: string,
  id: Uuid,
  patch: { name?: string | undefined; content?: string | undefined },
): Promise<ChatTemplateView> {
  check(patch);
  const row = await db
    .updateTable('platform.chat_templates')
    .set({ ...defined({ name: patch.name, content: patch.content }), updated_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Chat template');
  return view(row);
}

export async function deleteChatTemplate(db: Db, workspaceId: string, id: Uuid): Promise<ChatTemplateView> {
  return view(await deleteScoped(db, 'platform.chat_templates', workspaceId, id, 'Chat template'));
}

/**
 * Makes one template the active one and every other template of the workspace inactive. Run it in a transaction
 * (the route does): the advisory lock and both updates then commit together. Activating the active one is a no-op.
 */
export async function activateChatTemplate(
  db: Db,
  workspaceId: string,
  id: Uuid,
): Promise<{ template: ChatTemplateView; deactivated: string[] }> {
  await getChatTemplate(db, workspaceId, id);
  await lockActivation(db, workspaceId);
  const off = await db
    .updateTable('platform.chat_templates')
    .set({ is_active: false, updated_at: new Date() })
    .where('workspace_id', '=', workspaceId)
    .where('is_active', '=', true)
    .where('id', '!=', id)
    .returning('id')
    .execute();
  const row = await db
    .updateTable('platform.chat_templates')
    .set({ is_active: true, updated_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
  // Deleted between the check and the lock.
  if (!row) throw notFound('Chat template');
  return { template: view(row), deactivated: off.map((r) => r.id) };
}

/** Deactivates every template of the workspace; answers the ids that were active (none or one). */
export async function deactivateChatTemplates(db: Db, workspaceId: string): Promise<string[]> {
  await lockActivation(db, workspaceId);
  const off = await db
    .updateTable('platform.chat_templates')
    .set({ is_active: false, updated_at: new Date() })
    .where('workspace_id', '=', workspaceId)
    .where('is_active', '=', true)
    .returning('id')
    .execute();
  return off.map((r) => r.id);
}

/** The active template of the workspace, if any. */
export async function getActiveChatTemplate(db: Db, workspaceId: string): Promise<ChatTemplateView | null> {
  const row = await db
    .selectFrom('platform.chat_templates')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('is_active', '=', true)
    .executeTakeFirst();
  return row ? view(row) : null;
}
