import { type Db, type PromptRuleRow, type SkillRow, newId, type Uuid } from '@wds/db';
import { notFound } from '@wds/errors';
import { MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_PROMPT_RULE_CHARS, MAX_SKILL_CHARS, type Page, checkText, iso } from './limits.js';
import { defined, deleteScoped, getScoped, listScoped } from './scoped.js';
import type { PromptRuleView, SkillView } from './views.js';

const ruleView = (r: PromptRuleRow): PromptRuleView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  content: r.content,
  created_by: r.created_by,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

const skillView = (s: SkillRow): SkillView => ({
  id: s.id,
  workspace_id: s.workspace_id,
  name: s.name,
  description: s.description,
  content: s.content,
  created_by: s.created_by,
  created_at: iso(s.created_at),
  updated_at: iso(s.updated_at),
});

// ---- prompt rules -------------------------------------------------------------------------------------------

/** Oldest first. */
export async function listPromptRules(db: Db, workspaceId: string, page: Page): Promise<PromptRuleView[]> {
  return (await listScoped(db, 'platform.prompt_rules', workspaceId, page)).map(ruleView);
}

export async function createPromptRule(db: Db, workspaceId: string, input: { content: string; createdBy: string | null }): Promise<PromptRuleView> {
  checkText('content', input.content, MAX_PROMPT_RULE_CHARS);
  const row = await db
    .insertInto('platform.prompt_rules')
    .values({ id: newId(), workspace_id: workspaceId, content: input.content, created_by: input.createdBy })
    .returningAll()
    .executeTakeFirstOrThrow();
  return ruleView(row);
}

export async function updatePromptRule(db: Db, workspaceId: string, id: Uuid, patch: { content?: string | undefined }): Promise<PromptRuleView> {
  if (patch.content !== undefined) checkText('content', patch.content, MAX_PROMPT_RULE_CHARS);
  const row = await db
    .updateTable('platform.prompt_rules')
    .set({ ...defined({ content: patch.content }), updated_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Prompt rule');
  return ruleView(row);
}

export async function deletePromptRule(db: Db, workspaceId: string, id: Uuid): Promise<PromptRuleView> {
  return ruleView(await deleteScoped(db, 'platform.prompt_rules', workspaceId, id, 'Prompt rule'));
}

// ---- skills -------------------------------------------------------------------------------------------------

export interface SkillInput {
  name: string;
  description?: string | null | undefined;
  content: string;
}

function checkSkill(s: Partial<SkillInput>): void {
  if (s.name !== undefined) checkText('name', s.name, MAX_NAME_CHARS);
  if (s.description !== undefined && s.description !== null) checkText('description', s.description, MAX_DESCRIPTION_CHARS, { allowEmpty: true });
  if (s.content !== undefined) checkText('content', s.content, MAX_SKILL_CHARS);
}

/** Oldest first. */
export async function listSkills(db: Db, workspaceId: string, page: Page): Promise<SkillView[]> {
  return (await listScoped(db, 'platform.skills', workspaceId, page)).map(skillView);
}

export async function getSkill(db: Db, workspaceId: string, id: Uuid): Promise<SkillView> {
  return skillView(await getScoped(db, 'platform.skills', workspaceId, id, 'Skill'));
}

export async function createSkill(db: Db, workspaceId: string, input: SkillInput & { createdBy: string | null }): Promise<SkillView> {
  checkSkill(input);
  const row = await db
    .insertInto('platform.skills')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      name: input.name,
      description: input.description ?? null,
      content: input.content,
      created_by: input.createdBy,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return skillView(row);
}

export async function updateSkill(db: Db, workspaceId: string, id: Uuid, patch: Partial<SkillInput>): Promise<SkillView> {
  checkSkill(patch);
  const row = await db
    .updateTable('platform.skills')
    .set({ ...defined({ name: patch.name, description: patch.description, content: patch.content }), updated_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Skill');
  return skillView(row);
}

export async function deleteSkill(db: Db, workspaceId: string, id: Uuid): Promise<SkillView> {
  return skillView(await deleteScoped(db, 'platform.skills', workspaceId, id, 'Skill'));
}
