import {
  MAX_CHAT_TEMPLATE_CHARS,
  MAX_DESCRIPTION_CHARS,
  MAX_NAME_CHARS,
  MAX_PROMPT_RULE_CHARS,
  MAX_SKILL_CHARS,
  MAX_TITLE_RULE_CHARS,
  activateChatTemplate,
  charCount,
  createChatTemplate,
  createPromptRule,
  createSkill,
  deactivateChatTemplates,
  deleteChatTemplate,
  deletePromptRule,
  deleteSkill,
  deleteTitleRule,
  getChatTemplate,
  getDashboardEnabled,
  getSkill,
  getTitleRule,
  listChatTemplates,
  listCredentials,
  listPromptRules,
  listSkills,
  putTitleRule,
  setDashboardEnabled,
  updateChatTemplate,
  updatePromptRule,
  updateSkill,
  withinChars,
} from '@wds/setup';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { PageQuery, withJsonSchema } from '../http/schemas.js';
import { ChatTemplate, ChatTemplatesDeactivated, DashboardEnabled, PromptRule, SaasCredential, Skill, TitleRule } from '../http/views/index.js';

/** Workspace setup items (docs/setup.md#routes): path-scoped. */
const base = '/api/v1/workspaces/:id/setup';

/** Text of at most `max` Unicode characters; non-blank unless `allowEmpty`. */
const Text = (max: number, allowEmpty = false) =>
  v.pipe(
    v.string('must be a string'),
    withJsonSchema(v.check<string, string>((s) => allowEmpty || s.trim() !== '', 'must not be empty'), allowEmpty ? {} : { pattern: '\\S' }),
    // Unicode characters, as JSON Schema counts them.
    withJsonSchema(v.check<string, string>((s) => withinChars(s, max), `at most ${max} characters`), { maxLength: max }),
  );
const Name = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), withJsonSchema(v.check<string, string>((s) => withinChars(s, MAX_NAME_CHARS), `at most ${MAX_NAME_CHARS} characters`), { maxLength: MAX_NAME_CHARS }));
const Description = v.optional(v.nullable(Text(MAX_DESCRIPTION_CHARS, true)));

const member = { auth: 'user', workspace: 'path', role: 'member' } as const;
const admin = { auth: 'user', workspace: 'path', role: 'admin' } as const;

export const setupRoutes = [
  // ---- prompt rules
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/prompt-rules`,
    operation: 'list_prompt_rules',
    summary: 'Prompt rules of the workspace, oldest first',
    query: PageQuery,
    response: v.array(PromptRule),
    handler: ({ db, access, query }) => listPromptRules(db, access.workspace.id, query),
  }),
  defineRoute({
    ...admin,
    method: 'post',
    path: `${base}/prompt-rules`,
    operation: 'create_prompt_rule',
    summary: `Add a prompt rule (content: at most ${MAX_PROMPT_RULE_CHARS} characters)`,
    body: v.object({ content: Text(MAX_PROMPT_RULE_CHARS) }),
    status: 201,
    response: PromptRule,
    handler: async ({ db, access, principal, body, audit }) => {
      const r = await createPromptRule(db, access.workspace.id, { content: body.content, createdBy: principal.user.id });
      audit({ details: { length: charCount(r.content) } });
      return r;
    },
  }),
  defineRoute({
    ...admin,
    method: 'patch',
    path: `${base}/prompt-rules/:ruleId`,
    operation: 'update_prompt_rule',
    summary: 'Change the content of a prompt rule',
    body: v.strictObject({ content: v.optional(Text(MAX_PROMPT_RULE_CHARS)) }),
    response: PromptRule,
    handler: async ({ db, access, params, body, audit }) => {
      const r = await updatePromptRule(db, access.workspace.id, params.ruleId, body);
      audit({ details: { length: charCount(r.content) } });
      return r;
    },
  }),
  defineRoute({
    ...admin,
    method: 'delete',
    path: `${base}/prompt-rules/:ruleId`,
    operation: 'delete_prompt_rule',
    summary: 'Delete a prompt rule',
    status: 204,
    handler: async ({ db, access, params, audit }) => {
      const r = await deletePromptRule(db, access.workspace.id, params.ruleId);
      audit({ resourceId: r.id });
    },
  }),

  // ---- skills
  defineRoute({
    ...admin,
    method: 'get',
    path: `${base}/skills`,
    operation: 'list_skills',
    summary: 'Skills of the workspace, oldest first',
    query: PageQuery,
    response: v.array(Skill),
    handler: ({ db, access, query }) => listSkills(db, access.workspace.id, query),
  }),
  defineRoute({
    ...admin,
    method: 'post',
    path: `${base}/skills`,
    operation: 'create_skill',
    summary: `Add a skill { name, description?, content } (content: at most ${MAX_SKILL_CHARS} characters)`,
    body: v.object({ name: Name, description: Description, content: Text(MAX_SKILL_CHARS) }),
    status: 201,
    response: Skill,
    handler: async ({ db, access, principal, body, audit }) => {
      const s = await createSkill(db, access.workspace.id, { ...body, createdBy: principal.user.id });
      audit({ details: { name: s.name } });
      return s;
    },
  }),
  defineRoute({
    ...admin,
    method: 'get',
    path: `${base}/skills/:skillId`,
    operation: 'get_skill',
    summary: 'A skill',
    response: Skill,
    handler: ({ db, access, params }) => getSkill(db, access.workspace.id, params.skillId),
  }),
  defineRoute({
    ...admin,
    method: 'patch',
    path: `${base}/skills/:skillId`,
    operation: 'update_skill',
    summary: 'Change name, description or content of a skill',
    body: v.strictObject({ name: v.optional(Name), description: Description, content: v.optional(Text(MAX_SKILL_CHARS)) }),
    response: Skill,
    handler: async ({ db, access, params, body, audit }) => {
      const s = await updateSkill(db, access.workspace.id, params.skillId, body);
      audit({ details: { name: s.name, changed: Object.keys(body) } });
      return s;
    },
  }),
  defineRoute({
    ...admin,
    method: 'delete',
    path: `${base}/skills/:skillId`,
    operation: 'delete_skill',
    summary: 'Delete a skill',
    status: 204,
    handler: async ({ db, access, params, audit }) => {
      const s = await deleteSkill(db, access.workspace.id, params.skillId);
      audit({ resourceId: s.id, details: { name: s.name } });
    },
  }),

  // ---- title rule (one per workspace)
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/title-rule`,
    operation: 'get_title_rule',
    summary: 'The title rule; content is null when none is set',
    response: TitleRule,
    handler: ({ db, access }) => getTitleRule(db, access.workspace.id),
  }),
  defineRoute({
    ...admin,
    method: 'put',
    path: `${base}/title-rule`,
    operation: 'put_title_rule',
    summary: `Set the title rule (at most ${MAX_TITLE_RULE_CHARS} characters); empty content deletes it`,
    body: v.object({ content: Text(MAX_TITLE_RULE_CHARS, true) }),
    response: TitleRule,
    handler: async ({ db, access, principal, body, audit }) => {
      const r = await putTitleRule(db, access.workspace.id, body.content, principal.user.id);
      audit({ resourceId: access.workspace.id, details: r.rule.content === null ? { deleted: r.deleted } : { length: charCount(r.rule.content) } });
      return r.rule;
    },
  }),
  defineRoute({
    ...admin,
    method: 'delete',
    path: `${base}/title-rule`,
    operation: 'delete_title_rule',
    summary: 'Delete the title rule (404 when none is set)',
    status: 204,
    handler: async ({ db, access, audit }) => {
      await deleteTitleRule(db, access.workspace.id);
      audit({ resourceId: access.workspace.id });
    },
  }),

  // ---- chat templates. `deactivate` is declared before `:templateId` (and has no GET/PATCH/DELETE twin there).
  defineRoute({
    ...admin,
    method: 'post',
    path: `${base}/chat-templates/deactivate`,
    operation: 'deactivate_chat_templates',
    summary: 'Deactivate every chat template; answers { deactivated: [ids] }',
    response: ChatTemplatesDeactivated,
    handler: async ({ db, access, audit }) => {
      const deactivated = await deactivateChatTemplates(db, access.workspace.id);
      audit({ details: { deactivated } });
      return { deactivated };
    },
  }),
  defineRoute({
    ...admin,
    method: 'get',
    path: `${base}/chat-templates`,
    operation: 'list_chat_templates',
    summary: 'Chat templates of the workspace, oldest first',
    query: PageQuery,
    response: v.array(ChatTemplate),
    handler: ({ db, access, query }) => listChatTemplates(db, access.workspace.id, query),
  }),
  defineRoute({
    ...admin,
    method: 'post',
    path: `${base}/chat-templates`,
    operation: 'create_chat_template',
    summary: `Add a chat template { name, content } (inactive; content: at most ${MAX_CHAT_TEMPLATE_CHARS} characters)`,
    body: v.object({ name: Name, content: Text(MAX_CHAT_TEMPLATE_CHARS) }),
    status: 201,
    response: ChatTemplate,
    handler: async ({ db, access, principal, body, audit }) => {
      const t = await createChatTemplate(db, access.workspace.id, { ...body, createdBy: principal.user.id });
      audit({ details: { name: t.name } });
      return t;
    },
  }),
  defineRoute({
    ...admin,
    method: 'get',
    path: `${base}/chat-templates/:templateId`,
    operation: 'get_chat_template',
    summary: 'A chat template',
    response: ChatTemplate,
    handler: ({ db, access, params }) => getChatTemplate(db, access.workspace.id, params.templateId),
  }),
  defineRoute({
    ...admin,
    method: 'patch',
    path: `${base}/chat-templates/:templateId`,
    operation: 'update_chat_template',
    summary: 'Change name or content of a chat template (activation has its own routes)',
    body: v.strictObject({ name: v.optional(Name), content: v.optional(Text(MAX_CHAT_TEMPLATE_CHARS)) }),
    response: ChatTemplate,
    handler: async ({ db, access, params, body, audit }) => {
      const t = await updateChatTemplate(db, access.workspace.id, params.templateId, body);
      audit({ details: { name: t.name, changed: Object.keys(body) } });
      return t;
    },
  }),
  defineRoute({
    ...admin,
    method: 'delete',
    path: `${base}/chat-templates/:templateId`,
    operation: 'delete_chat_template',
    summary: 'Delete a chat template (deleting the active one leaves none active)',
    status: 204,
    handler: async ({ db, access, params, audit }) => {
      const t = await deleteChatTemplate(db, access.workspace.id, params.templateId);
      audit({ resourceId: t.id, details: { name: t.name, was_active: t.is_active } });
    },
  }),
  defineRoute({
    ...admin,
    method: 'post',
    path: `${base}/chat-templates/:templateId/activate`,
    operation: 'activate_chat_template',
    summary: 'Make this template the active one; the others are deactivated in the same transaction',
    response: ChatTemplate,
    handler: async ({ db, access, params, audit }) => {
      const r = await activateChatTemplate(db, access.workspace.id, params.templateId);
      audit({ resourceId: r.template.id, details: { name: r.template.name, deactivated: r.deactivated } });
      return r.template;
    },
  }),

  // ---- dashboard flag
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/dashboard-enabled`,
    operation: 'get_dashboard_enabled',
    summary: 'Whether the workspace dashboard is enabled, as { enabled }',
    response: DashboardEnabled,
    handler: ({ db, access }) => getDashboardEnabled(db, access.workspace.id),
  }),
  defineRoute({
    ...admin,
    method: 'put',
    path: `${base}/dashboard-enabled`,
    operation: 'put_dashboard_enabled',
    summary: 'Enable or disable the workspace dashboard: { enabled: boolean }',
    body: v.object({ enabled: v.boolean('must be true or false') }),
    response: DashboardEnabled,
    handler: async ({ db, access, body, audit }) => {
      const r = await setDashboardEnabled(db, access.workspace.id, body.enabled);
      audit({ resourceId: access.workspace.id, details: { enabled: r.enabled } });
      return r;
    },
  }),

  // ---- connected providers
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/saas-credentials`,
    operation: 'list_saas_credentials',
    summary: 'Connected providers: [{ provider, updated_at }], never the credential values',
    query: PageQuery,
    response: v.array(SaasCredential),
    handler: ({ db, access, query }) => listCredentials(db, access.workspace.id, query),
  }),
];
