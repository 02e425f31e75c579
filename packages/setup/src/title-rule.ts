import type { Db } from '@wds/db';
import { notFound } from '@wds/errors';
import { MAX_TITLE_RULE_CHARS, checkText, iso } from './limits.js';
import type { TitleRuleView } from './views.js';

const none = (workspaceId: string): TitleRuleView => ({ workspace_id: workspaceId, content: null, updated_by: null, updated_at: null });

export async function getTitleRule(db: Db, workspaceId: string): Promise<TitleRuleView> {
  const row = await db.selectFrom('platform.title_rules').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
  return row ? { workspace_id: row.workspace_id, content: row.content, updated_by: row.updated_by, updated_at: iso(row.updated_at) } : none(workspaceId);
}

/**
 * Sets the title rule; empty (or blank) content deletes it. Answers the rule as it now is and whether a rule was
 * removed.
 */
export async function putTitleRule(
  db: Db,
  workspaceId: string,
  content: string,
  updatedBy: string | null,
): Promise<{ rule: TitleRuleView; deleted: boolean }> {
  if (content.trim() === '') {
    const r = await db.deleteFrom('platform.title_rules').where('workspace_id', '=', workspaceId).executeTakeFirst();
    return { rule: none(workspaceId), deleted: r.numDeletedRows > 0n };
  }
  checkText('content', content, MAX_TITLE_RULE_CHARS);
  const now = new Date();
  const row = await db
    .insertInto('platform.title_rules')
    .values({ workspace_id: workspaceId, content, updated_by: updatedBy, updated_at: now })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ content, updated_by: updatedBy, updated_at: now }))
    .returningAll()
    .executeTakeFirstOrThrow();
  return {
    rule: { workspace_id: row.workspace_id, content: row.content, updated_by: row.updated_by, updated_at: iso(row.updated_at) },
    deleted: false,
  };
}

/** 404 when the workspace has no title rule. */
export async function deleteTitleRule(db: Db, workspaceId: string): Promise<void> {
  const r = await db.deleteFrom('platform.title_rules').where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (r.numDeletedRows === 0n) throw notFound('Title rule');
}
