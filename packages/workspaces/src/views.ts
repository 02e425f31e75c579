import type { Invitation, Role, Workspace } from '@wds/db';

const iso = (d: Date) => d.toISOString();

export interface WorkspaceView {
  id: string;
  name: string;
  ddl_policy_group_id: string | null;
  workflow_editor_policy_group_id: string | null;
  policy_editor_policy_group_id: string | null;
  mcp_timeout_ms: number;
  custom_prompt: string;
  auto_embed_files: boolean;
  auto_embed_tables: boolean;
  created_at: string;
  updated_at: string;
}

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
  created_at: iso(w.created_at),
  updated_at: iso(w.updated_at),
});

export interface MemberView {
  id: string;
  user_id: string;
  user_email: string;
  user_name: string;
  role: Role;
  created_at: string;
}

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

export interface InvitationView {
  id: string;
  workspace_id: string;
  email: string;
  role: Role;
  invited_by: string | null;
  created_at: string;
}

export const toInvitationView = (i: Invitation): InvitationView => ({
  id: i.id,
  workspace_id: i.workspace_id,
  email: i.email,
  role: i.role,
  invited_by: i.invited_by,
  created_at: iso(i.created_at),
});
