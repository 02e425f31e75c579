import { field } from '@wds/db';
import * as v from 'valibot';

/** The views of the workspace setup items: what the API answers (apps/api re-exports them). */

/** A prompt rule; `created_by` is null once its author is gone. */
export const PromptRuleView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  content: v.string(),
  created_by: v.nullable(field.Uuid),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type PromptRuleView = v.InferOutput<typeof PromptRuleView>;

/** A skill, with its content: listed whole too. */
export const SkillView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  name: v.string(),
  description: v.nullable(v.string()),
  content: v.string(),
  created_by: v.nullable(field.Uuid),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type SkillView = v.InferOutput<typeof SkillView>;

/** The workspace's one title rule; every field but `workspace_id` is null when there is none. */
export const TitleRuleView = v.object({
  workspace_id: field.Uuid,
  content: v.nullable(v.string()),
  updated_by: v.nullable(field.Uuid),
  updated_at: v.nullable(field.Timestamp),
});
export type TitleRuleView = v.InferOutput<typeof TitleRuleView>;

/** A chat template; at most one of a workspace's templates is active. */
export const ChatTemplateView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  name: v.string(),
  content: v.string(),
  is_active: v.boolean(),
  created_by: v.nullable(field.Uuid),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type ChatTemplateView = v.InferOutput<typeof ChatTemplateView>;

/** A connected provider: its name and when it was last set, never the credential value. */
export const CredentialView = v.object({ provider: v.string(), updated_at: field.Timestamp });
export type CredentialView = v.InferOutput<typeof CredentialView>;
