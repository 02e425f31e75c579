import {
  createPolicy,
  createPolicyGroup,
  deletePolicy,
  deletePolicyGroup,
  getPolicy,
  getPolicyGroup,
  listPolicies,
  listPolicyGroups,
  updatePolicy,
  updatePolicyGroup,
} from '@wds/policies';
import { CONDITION_JSON_SCHEMA } from '@wds/policy-engine';
import { LOGICAL_NAME } from '@wds/sql-rewriter';
import * as v from 'valibot';
import { assertPolicyEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { Policy, PolicyGroup } from '../http/views/index.js';
import { PageQuery, Uuid, withJsonSchema } from '../http/schemas.js';

const Name = v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(255));
const Mode = v.picklist(['allow', 'deny'], 'must be allow or deny');
const Operation = v.picklist(['select', 'insert', 'update', 'delete'], 'must be select, insert, update or delete');
const TableName = v.pipe(v.string(), v.regex(LOGICAL_NAME, 'must be a lower-case identifier of at most 23 characters'));
/** A modql condition, checked by parseCondition (@wds/policy-engine) in the package; null or absent: none. */
const Condition = withJsonSchema(v.nullable(v.unknown()), { anyOf: [CONDITION_JSON_SCHEMA, { type: 'null' }] });
const Ids = v.pipe(v.array(Uuid), v.maxLength(10_000));

const PolicyBody = v.object({
  name: Name,
  policy_group_id: Uuid,
  mode: Mode,
  table_name: TableName,
  operation: Operation,
  condition: v.optional(Condition),
});
const PolicyPatch = v.strictObject({
  name: v.optional(Name),
  policy_group_id: v.optional(Uuid),
  mode: v.optional(Mode),
  table_name: v.optional(TableName),
  operation: v.optional(Operation),
  condition: v.optional(Condition),
});
/**
 * A policy not saved yet, for execute's view-as (docs/sql-and-policies.md#view-as): `policy_id` names the saved
 * policy it edits (the draft takes its place), none for a new one.
 */
export const DraftPolicyBody = v.strictObject({
  policy_id: v.optional(v.nullable(Uuid)),
  name: v.optional(Name),
  policy_group_id: Uuid,
  mode: Mode,
  table_name: TableName,
  operation: Operation,
  condition: v.optional(Condition),
});
const GroupBody = v.object({ name: Name, user_ids: v.optional(Ids, []), stf_ids: v.optional(Ids, []) });
const GroupPatch = v.strictObject({ name: v.optional(Name), user_ids: v.optional(Ids), stf_ids: v.optional(Ids) });

const common = { auth: 'user', workspace: 'header', role: 'member' } as const;
const describe = (p: { name: string; mode: string; table_name: string; operation: string }) => ({
  name: p.name,
  mode: p.mode,
  table_name: p.table_name,
  operation: p.operation,
});

export const policyRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/policies',
    operation: 'list_policies',
    response: v.array(Policy),
    summary: 'Policies of the workspace',
    query: PageQuery,
    handler: ({ db, access, query }) => listPolicies(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/policies',
    operation: 'create_policy',
    response: Policy,
    summary: 'Create a policy (restricted to the policy editor group when set)',
    body: PolicyBody,
    status: 201,
    handler: async (ctx) => {
      await assertPolicyEditor(ctx);
      const p = await createPolicy(ctx.db, ctx.access.workspace.id, ctx.body);
      ctx.audit({ details: { ...describe(p), condition: p.condition } });
      return p;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/policies/:policyId',
    operation: 'get_policy',
    response: Policy,
    summary: 'A policy',
    handler: ({ db, access, params }) => getPolicy(db, access.workspace.id, params.policyId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: '/api/v1/policies/:policyId',
    operation: 'update_policy',
    response: Policy,
    summary: 'Change a policy',
    body: PolicyPatch,
    handler: async (ctx) => {
      await assertPolicyEditor(ctx);
      const p = await updatePolicy(ctx.db, ctx.access.workspace.id, ctx.params.policyId, ctx.body);
      ctx.audit({ details: { ...describe(p), condition: p.condition } });
      return p;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: '/api/v1/policies/:policyId',
    operation: 'delete_policy',
    summary: 'Delete a policy',
    status: 204,
    handler: async (ctx) => {
      await assertPolicyEditor(ctx);
      const p = await deletePolicy(ctx.db, ctx.access.workspace.id, ctx.params.policyId);
      ctx.audit({ resourceId: p.id, details: describe(p) });
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/policy-groups',
    operation: 'list_policy_groups',
    response: v.array(PolicyGroup),
    summary: 'Policy groups of the workspace',
    query: PageQuery,
    handler: ({ db, access, query }) => listPolicyGroups(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/policy-groups',
    operation: 'create_policy_group',
    response: PolicyGroup,
    summary: 'Create a policy group of users and STFs',
    body: GroupBody,
    status: 201,
    handler: async (ctx) => {
      await assertPolicyEditor(ctx);
      const g = await createPolicyGroup(ctx.db, ctx.access.workspace.id, ctx.body);
      ctx.audit({ details: { name: g.name, user_ids: g.user_ids, stf_ids: g.stf_ids } });
      return g;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/policy-groups/:groupId',
    operation: 'get_policy_group',
    response: PolicyGroup,
    summary: 'A policy group',
    handler: ({ db, access, params }) => getPolicyGroup(db, access.workspace.id, params.groupId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: '/api/v1/policy-groups/:groupId',
    operation: 'update_policy_group',
    response: PolicyGroup,
    summary: 'Change a policy group; user_ids and stf_ids are replaced entirely',
    body: GroupPatch,
    handler: async (ctx) => {
      await assertPolicyEditor(ctx);
      const g = await updatePolicyGroup(ctx.db, ctx.access.workspace.id, ctx.params.groupId, ctx.body);
      ctx.audit({ details: { name: g.name, user_ids: g.user_ids, stf_ids: g.stf_ids } });
      return g;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: '/api/v1/policy-groups/:groupId',
    operation: 'delete_policy_group',
    summary: 'Delete a policy group that no policy or workspace setting uses',
    status: 204,
    handler: async (ctx) => {
      await assertPolicyEditor(ctx);
      const g = await deletePolicyGroup(ctx.db, ctx.access.workspace.id, ctx.params.groupId);
      ctx.audit({ resourceId: g.id, details: { name: g.name } });
    },
  }),
];
