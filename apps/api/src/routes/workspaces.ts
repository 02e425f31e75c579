import {
  createWorkspace,
  listWorkspaces,
  softDeleteWorkspace,
  toWorkspaceView,
  updateWorkspace,
} from '@wds/workspaces';
import { SQL_APPROVAL_APPLIES_TO, SQL_APPROVAL_MODES } from '@wds/db';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { Workspace, WorkspaceWithRole } from '../http/views/index.js';
import { PageQuery, Uuid } from '../http/schemas.js';

const Name = v.pipe(v.string(), v.minLength(1, 'must have 1-255 characters'), v.maxLength(255, 'must have 1-255 characters'));
const GroupId = v.nullable(Uuid);

const CreateWorkspace = v.object({ name: Name });
const PatchWorkspace = v.strictObject({
  name: v.optional(Name),
  ddl_policy_group_id: v.optional(GroupId),
  workflow_editor_policy_group_id: v.optional(GroupId),
  policy_editor_policy_group_id: v.optional(GroupId),
  mcp_timeout_ms: v.optional(
    v.pipe(v.number(), v.integer('must be an integer'), v.minValue(30000, 'must be 30000-3600000'), v.maxValue(3600000, 'must be 30000-3600000')),
  ),
  custom_prompt: v.optional(v.pipe(v.string(), v.maxLength(100_000))),
  auto_embed_files: v.optional(v.boolean()),
  auto_embed_tables: v.optional(v.boolean()),
  sql_approval_mode: v.optional(v.picklist(SQL_APPROVAL_MODES)),
  sql_approval_applies_to: v.optional(v.picklist(SQL_APPROVAL_APPLIES_TO)),
  sql_approver_policy_group_id: v.optional(GroupId),
  sql_self_approval: v.optional(v.boolean()),
});

export const workspaceRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/workspaces',
    operation: 'list_workspaces',
    response: v.array(WorkspaceWithRole),
    summary: 'Workspaces the caller belongs to (with the caller role)',
    auth: 'user',
    query: PageQuery,
    handler: ({ db, principal, query }) =>
      listWorkspaces(db, { userId: principal.user.id, scopedWorkspaceId: principal.scopedWorkspaceId }, query),
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces',
    operation: 'create_workspace',
    response: Workspace,
    summary: "Create a workspace; the caller becomes its admin (a person's login: a session token or an unscoped JWT)",
    auth: 'login',
    body: CreateWorkspace,
    status: 201,
    handler: async ({ db, services, principal, body, audit }) => {
      const ws = await createWorkspace(db, { name: body.name, createdBy: principal.user.id, maxPerUser: services.config.MAX_WORKSPACES_PER_USER });
      audit({ workspaceId: ws.id, details: { name: ws.name } });
      return ws;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/workspaces/:id',
    operation: 'get_workspace',
    response: WorkspaceWithRole,
    summary: 'Workspace details',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    handler: async ({ access }) => ({ ...toWorkspaceView(access.workspace), role: access.role }),
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/workspaces/:id',
    operation: 'update_workspace',
    response: Workspace,
    summary: 'Change workspace settings',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    body: PatchWorkspace,
    handler: async ({ db, access, body, audit }) => {
      const ws = await updateWorkspace(db, access.workspace.id, body);
      const { custom_prompt, ...rest } = body;
      audit({ details: { changed: Object.keys(body), ...rest } });
      return ws;
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/v1/workspaces/:id',
    operation: 'delete_workspace',
    summary: 'Soft-delete a workspace',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    status: 204,
    handler: async ({ db, access, audit }) => {
      await softDeleteWorkspace(db, access.workspace.id);
      audit({ resourceId: access.workspace.id });
    },
  }),
];
