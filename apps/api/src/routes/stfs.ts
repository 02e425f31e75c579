import { decodeStfCode, describeStf } from '@wds/stf-runner';
import {
  addVersion,
  createStf,
  deleteSecret,
  getStf,
  listSecretKeys,
  listStfs,
  listVersions,
  softDeleteStf,
  updateStf,
  upsertSecret,
} from '@wds/stfs';
import * as v from 'valibot';
import { assertWorkflowEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { Stf, StfCreated, StfDescription, StfSecretKey, StfVersion } from '../http/views/index.js';
import { secretBox } from '../http/secrets.js';
import { PageQuery, StfCode, StfRuntime } from '../http/schemas.js';

const Schema = v.optional(v.nullable(v.record(v.string(), v.unknown())));
const Label = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(100));
const VersionFields = {
  version: Label,
  runtime: StfRuntime,
  code: StfCode,
  input_schema: Schema,
  output_schema: Schema,
};
const CreateStf = v.object({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255)),
  description: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(10_000)))),
  is_public: v.optional(v.boolean()),
  ...VersionFields,
});
const PatchStf = v.strictObject({
  name: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255))),
  description: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(10_000)))),
  is_public: v.optional(v.boolean()),
});

const common = { auth: 'user', workspace: 'header', role: 'member' } as const;

export const stfRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/stfs',
    operation: 'list_stfs',
    response: v.array(Stf),
    summary: 'STFs of the workspace, each with its latest version',
    query: PageQuery,
    handler: ({ db, access, query }) => listStfs(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/stfs',
    operation: 'create_stf',
    response: StfCreated,
    summary: 'Create an STF with its first version (workflow editors)',
    body: CreateStf,
    status: 201,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const { name, description, is_public, version, runtime, code, input_schema, output_schema } = ctx.body;
      const bytes = await decodeStfCode(ctx.services.config, runtime, code);
      const r = await createStf(ctx.db, ctx.access.workspace.id, {
        name,
        description: description ?? null,
        is_public: is_public ?? false,
        createdBy: ctx.principal.user.id,
        version: { version, runtime, code: bytes, input_schema, output_schema },
      });
      ctx.audit({ resourceId: r.stf.id, details: { name, version, runtime } });
      return { ...r.stf, version: r.version };
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/stfs/:stfId',
    operation: 'get_stf',
    response: Stf,
    summary: 'An STF',
    handler: ({ db, access, params }) => getStf(db, access.workspace.id, params.stfId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: '/api/v1/stfs/:stfId',
    operation: 'update_stf',
    response: Stf,
    summary: 'Change name, description or is_public (workflow editors)',
    body: PatchStf,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const stf = await updateStf(ctx.db, ctx.access.workspace.id, ctx.params.stfId, ctx.body);
      ctx.audit({ details: { changed: Object.keys(ctx.body) } });
      return stf;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: '/api/v1/stfs/:stfId',
    operation: 'delete_stf',
    summary: 'Soft-delete an STF (workflow editors)',
    status: 204,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const stf = await softDeleteStf(ctx.db, ctx.access.workspace.id, ctx.params.stfId);
      ctx.audit({ resourceId: stf.id, details: { name: stf.name } });
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/stfs/:stfId/versions',
    operation: 'list_stf_versions',
    response: v.array(StfVersion),
    summary: 'Versions of an STF, newest first',
    query: PageQuery,
    handler: ({ db, access, params, query }) => listVersions(db, access.workspace.id, params.stfId, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/stfs/:stfId/versions',
    operation: 'add_stf_version',
    response: StfVersion,
    summary: 'Add a version (workflow editors); the label must be new for this STF',
    body: v.object(VersionFields),
    status: 201,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const { version, runtime, code, input_schema, output_schema } = ctx.body;
      const bytes = await decodeStfCode(ctx.services.config, runtime, code);
      const r = await addVersion(
        ctx.db,
        ctx.access.workspace.id,
        ctx.params.stfId,
        { version, runtime, code: bytes, input_schema, output_schema },
        ctx.principal.user.id,
      );
      ctx.audit({ details: { stf_id: r.stf_id, version, runtime } });
      return r;
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/stfs/:stfId/describe',
    operation: 'describe_stf',
    response: StfDescription,
    summary: 'The input and output schemas of a version (the newest unless `version` names one)',
    body: v.object({ version: v.optional(Label) }),
    // Without stored schemas the code itself is asked (docs/stfs.md#describe), without sql() so describing changes
    // nothing; it stops when nobody waits for it.
    mcp: { stopsWhenAborted: true },
    handler: (ctx) =>
      describeStf(ctx.services, {
        workspace: ctx.access.workspace,
        userId: ctx.principal.user.id,
        stfId: ctx.params.stfId,
        label: ctx.body.version,
        signal: ctx.transport.signal,
      }),
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/stfs/:stfId/secrets',
    operation: 'list_stf_secrets',
    response: v.array(StfSecretKey),
    summary: 'Secret key names of an STF (values are write-only)',
    handler: async ({ db, access, params }) => {
      const stf = await getStf(db, access.workspace.id, params.stfId);
      return listSecretKeys(db, stf.id);
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/stfs/:stfId/secrets',
    operation: 'upsert_stf_secret',
    response: StfSecretKey,
    summary: 'Set a secret (workflow editors); the value is sealed and never returned',
    body: v.object({ env_key: v.string(), value: v.string() }),
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const stf = await getStf(ctx.db, ctx.access.workspace.id, ctx.params.stfId);
      const r = await upsertSecret(ctx.db, secretBox(ctx), stf.id, ctx.body.env_key, ctx.body.value);
      ctx.audit({ resourceId: `${stf.id}:${r.env_key}`, details: { stf_id: stf.id, env_key: r.env_key } });
      return r;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: '/api/v1/stfs/:stfId/secrets/:envKey',
    operation: 'delete_stf_secret',
    summary: 'Delete a secret (workflow editors)',
    status: 204,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const stf = await getStf(ctx.db, ctx.access.workspace.id, ctx.params.stfId);
      await deleteSecret(ctx.db, stf.id, ctx.params.envKey);
      ctx.audit({ resourceId: `${stf.id}:${ctx.params.envKey}`, details: { stf_id: stf.id, env_key: ctx.params.envKey } });
    },
  }),
];

