import * as v from 'valibot';
import { Uuid } from './common.js';

/** The views of the workspace setup items: prompt rules, skills, title rule, chat templates (@wds/setup owns them), flags. */
export { PromptRuleView as PromptRule, SkillView as Skill, TitleRuleView as TitleRule, ChatTemplateView as ChatTemplate } from '@wds/setup';

/** deactivate_chat_templates: the ids of the templates that were active (none or one). */
export const ChatTemplatesDeactivated = v.object({ deactivated: v.array(Uuid) });

/** Whether the workspace shows its dashboard (pinned charts). */
export const DashboardEnabled = v.object({ enabled: v.boolean() });

export { CredentialView as SaasCredential } from '@wds/setup';
