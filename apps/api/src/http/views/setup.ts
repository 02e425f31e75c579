import * as v from 'valibot';
import { Timestamp, Uuid } from './common.js';

/** The views of the workspace setup items (@wds/setup): prompt rules, skills, title rule, chat templates, flags. */

/** A prompt rule (@wds/setup PromptRuleView); `created_by` is null once its author is gone. */
export const PromptRule = v.object({
  id: Uuid,
  workspace_id: Uuid,
  content: v.string(),
  created_by: v.nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** A skill (@wds/setup SkillView), with its content: listed whole too. */
export const Skill = v.object({
  id: Uuid,
  workspace_id: Uuid,
  name: v.string(),
  description: v.nullable(v.string()),
  content: v.string(),
  created_by: v.nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** The workspace's one title rule (@wds/setup TitleRuleView): every field but `workspace_id` is null when none is set. */
export const TitleRule = v.object({
  workspace_id: Uuid,
  content: v.nullable(v.string()),
  updated_by: v.nullable(Uuid),
  updated_at: v.nullable(Timestamp),
});

/** A chat template (@wds/setup ChatTemplateView); at most one of a workspace's templates is active. */
export const ChatTemplate = v.object({
  id: Uuid,
  workspace_id: Uuid,
  name: v.string(),
  content: v.string(),
  is_active: v.boolean(),
  created_by: v.nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** deactivate_chat_templates: the ids of the templates that were active (none or one). */
export const ChatTemplatesDeactivated = v.object({ deactivated: v.array(Uuid) });

/** Whether the workspace shows its dashboard (pinned charts). */
export const DashboardEnabled = v.object({ enabled: v.boolean() });

/** A connected provider (@wds/setup CredentialView): its name and when it was last set, never the credential value. */
export const SaasCredential = v.object({ provider: v.string(), updated_at: Timestamp });
