import { FieldMappingSchema, mappingsFromObject, validateEffectSpec } from '@wds/effect-runner';
import {
  type NewEffectVersion,
  addEffectVersion,
  createEffect,
  getEffect,
  listEffectVersions,
  listEffects,
  softDeleteEffect,
  updateEffect,
} from '@wds/effects';
import { validationError } from '@wds/errors';
import * as v from 'valibot';
import { assertWorkflowEditor } from '../http/permissions.js';
import { Effect, EffectCreated, EffectVersion } from '../http/views/index.js';
import { defineRoute } from '../http/route.js';
import { PageQuery, withJsonSchema } from '../http/schemas.js';

/*
 * Valibot checks the shape of a body (types, required fields); what makes a call definition valid (URL scheme, HTTP
 * method, header names, timeout and retry bounds) is judged by `validateEffectSpec`, the runner's own rules, so what
 * is stored is what the runner will accept.
 */
const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255));
const Description = v.optional(v.nullable(v.pipe(v.string(), v.maxLength(10_000))));
const Label = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(100));
/**
 * An array of FieldMappings, or the origin platform's object form `{ target: value }` (a string starting with `$.`
 * is a Variable, anything else a Const), stored and answered as the array it stands for.
 */
const Mappings = withJsonSchema(
  v.pipe(
    v.union(
      [v.array(v.unknown()), v.record(v.string(), v.unknown())],
      'must be an array of { source: { type, value }, target } or an object { target: value }',
    ),
    v.transform((m) => (Array.isArray(m) ? m : mappingsFromObject(m))),
    v.array(FieldMappingSchema, 'must be an array of { source: { type, value }, target }'),
  ),
  (convert) => ({
    anyOf: [
      { type: 'array', items: convert(FieldMappingSchema) },
      { type: 'object', additionalProperties: {}, description: '{ target: value }: a string starting with `$.` is a Variable, anything else a Const' },
    ],
  }),
);
const Int = v.pipe(v.number('must be a number'), v.integer('must be an integer'));
const VersionFields = {
  version: Label,
  url: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(2048)),
  method: v.pipe(v.string('must be a string'), v.trim(), v.toUpperCase()),
  header_mappings: Mappings,
  body_mappings: Mappings,
  query_mappings: v.optional(Mappings),
  input_schema: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
  timeout_secs: v.optional(v.nullable(Int)),
  retries: v.optional(Int),
};
const VersionBody = v.object(VersionFields);
const CreateEffect = v.object({ name: Name, description: Description, ...VersionFields });
const PatchEffect = v.strictObject({ name: v.optional(Name), description: Description });

/** The call definition of a body, once the runner accepts it; its problems are a 400 listing each. */
function checkedVersion(body: v.InferOutput<typeof VersionBody>): NewEffectVersion {
  const spec: NewEffectVersion = {
    version: body.version,
    url: body.url,
    method: body.method,
    header_mappings: body.header_mappings,
    body_mappings: body.body_mappings,
    query_mappings: body.query_mappings ?? [],
    input_schema: body.input_schema ?? null,
    timeout_secs: body.timeout_secs ?? null,
    retries: body.retries ?? 0,
  };
  const problems = validateEffectSpec(spec);
  if (problems.length > 0) throw validationError(problems.join('; '));
  return spec;
}

/** Where the effect calls, for the audit log: the origin only (a URL's path or query may carry a token). */
const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

const common = { auth: 'user', workspace: 'header', role: 'member' } as const;

export const effectRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/effects',
    operation: 'list_effects',
    response: v.array(Effect),
    summary: 'Effects of the workspace, each with its latest version',
    query: PageQuery,
    handler: ({ db, access, query }) => listEffects(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/effects',
    operation: 'create_effect',
    response: EffectCreated,
    summary: 'Create an effect (an HTTP call definition) with its first version (workflow editors)',
    body: CreateEffect,
    status: 201,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const { name, description, ...rest } = ctx.body;
      const version = checkedVersion(rest);
      const r = await createEffect(ctx.db, ctx.access.workspace.id, {
        name,
        description: description ?? null,
        createdBy: ctx.principal.user.id,
        version,
      });
      ctx.audit({ resourceId: r.effect.id, details: { name, version: version.version, method: version.method, origin: originOf(version.url) } });
      return { ...r.effect, version: r.version };
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/effects/:effectId',
    operation: 'get_effect',
    response: Effect,
    summary: 'An effect',
    handler: ({ db, access, params }) => getEffect(db, access.workspace.id, params.effectId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: '/api/v1/effects/:effectId',
    operation: 'update_effect',
    response: Effect,
    summary: 'Change name or description (workflow editors); the call itself changes by adding a version',
    body: PatchEffect,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const effect = await updateEffect(ctx.db, ctx.access.workspace.id, ctx.params.effectId, ctx.body);
      ctx.audit({ details: { changed: Object.keys(ctx.body) } });
      return effect;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: '/api/v1/effects/:effectId',
    operation: 'delete_effect',
    summary: 'Soft-delete an effect (workflow editors)',
    status: 204,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const effect = await softDeleteEffect(ctx.db, ctx.access.workspace.id, ctx.params.effectId);
      ctx.audit({ resourceId: effect.id, details: { name: effect.name } });
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/effects/:effectId/versions',
    operation: 'list_effect_versions',
    response: v.array(EffectVersion),
    summary: 'Versions of an effect, newest first',
    query: PageQuery,
    handler: ({ db, access, params, query }) => listEffectVersions(db, access.workspace.id, params.effectId, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/effects/:effectId/versions',
    operation: 'add_effect_version',
    response: EffectVersion,
    summary: 'Add a version (workflow editors); the label must be new for this effect',
    body: VersionBody,
    status: 201,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      // An unknown effect is a 404 before its body is judged.
      await getEffect(ctx.db, ctx.access.workspace.id, ctx.params.effectId);
      const version = checkedVersion(ctx.body);
      const r = await addEffectVersion(ctx.db, ctx.access.workspace.id, ctx.params.effectId, version, ctx.principal.user.id);
      ctx.audit({ details: { effect_id: r.effect_id, version: r.version, method: r.method, origin: originOf(r.url) } });
      return r;
    },
  }),
];
