import { type Invitation, type Role, SQL_APPROVAL_APPLIES_TO, SQL_APPROVAL_MODES, type Workspace, field } from '@wds/db';
import * as v from 'valibot';

/** The views of workspaces, their members and invitations, and redirect URIs: what the API answers (apps/api re-exports them). */

const iso = (d: Date) => d.toISOString();

export const WorkspaceView = v.object({
  id: field.Uuid,
  name: v.string(),
  ddl_policy_group_id: v.nullable(field.Uuid),
  workflow_editor_policy_group_id: v.nullable(field.Uuid),
  policy_editor_policy_group_id: v.nullable(field.Uuid),
  mcp_timeout_ms: field.Integer,
  custom_prompt: v.string(),
  auto_embed_files: v.boolean(),
  auto_embed_tables: v.boolean(),
  /** SQL approval (docs/approvals.md#modes): which statements wait, whose, who approves, and whether one's own. */
  sql_approval_mode: v.picklist(SQL_APPROVAL_MODES),
  sql_approval_applies_to: v.picklist(SQL_APPROVAL_APPLIES_TO),
  sql_approver_policy_group_id: v.nullable(field.Uuid),
  sql_self_approval: v.boolean(),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type WorkspaceView = v.InferOutput<typeof WorkspaceView>;

/** A workspace as its member sees it: with the caller's role. */
export const WorkspaceWithRoleView = v.object({ ...WorkspaceView.entries, role: field.Role });
export type WorkspaceWithRoleView = v.InferOutput<typeof WorkspaceWithRoleView>;

export const toWorkspaceView = (w: Workspace): WorkspaceView => ({
  id: w.id,
  name: w.name,
  ddl_policy_group_id: w.ddl_policy_group_id,
  workflow_editor_policy_group_id: w.workflow_editor_policy_group_id,
  policy_editor_policy_group_id: w.policy_editor_policy_group_id,
  mcp_timeout_ms: w.mcp_timeout_ms,
  custom_prompt: w.custom_prompt,
  auto_embed_files: w.auto_embed_files,
  auto_embed_tables: w.auto_embed_tables,
  sql_approval_mode: w.sql_approval_mode,
  sql_approval_applies_to: w.sql_approval_applies_to,
  sql_approver_policy_group_id: w.sql_approver_policy_group_id,
  sql_self_approval: w.sql_self_approval,
  created_at: iso(w.created_at),
  updated_at: iso(w.updated_at),
});

export const MemberView = v.object({
  id: field.Uuid,
  user_id: field.Uuid,
  user_email: v.string(),
  user_name: v.string(),
  role: field.Role,
  created_at: field.Timestamp,
});
export type MemberView = v.InferOutput<typeof MemberView>;

export const toMemberView = (m: {
  id: string;
  user_id: string;
  email: string;
  name: string;
  role: Role;
  created_at: Date;
}): MemberView => ({
  id: m.id,
  user_id: m.user_id,
  user_email: m.email,
  user_name: m.name,
  role: m.role,
  created_at: iso(m.created_at),
});

export const InvitationView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  email: v.string(),
  role: field.Role,
  invited_by: v.nullable(field.Uuid),
  created_at: field.Timestamp,
});
export type InvitationView = v.InferOutput<typeof InvitationView>;

export const toInvitationView = (i: Invitation): InvitationView => ({
  id: i.id,
  workspace_id: i.workspace_id,
  email: i.email,
  role: i.role,
  invited_by: i.invited_by,
  created_at: iso(i.created_at),
});

/** add_member: the membership of a known user, or a pending invitation of an unknown email. */
export const MemberAddedView = v.union([v.object({ membership: MemberView }), v.object({ invitation: InvitationView })]);
export type MemberAddedView = v.InferOutput<typeof MemberAddedView>;

export const RedirectUriView = v.object({ id: field.Uuid, redirect_uri: v.string(), created_at: field.Timestamp });
export type RedirectUriView = v.InferOutput<typeof RedirectUriView>;
