/**
 * The shape of a workflow definition (docs/workflows.md#definition), as valibot schemas: the API validates request
 * bodies with them and the types come from them. What the shape cannot say (references, variables) is checked by
 * check.ts.
 */
import { FieldMappingSchema } from '@wds/effect-runner';
import { LOGICAL_NAME } from '@wds/sql-rewriter';
import * as v from 'valibot';

export { FieldMappingSchema };

const Uuid = v.pipe(v.string(), v.uuid('must be a UUID'));
const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255));

const Mappings = v.optional(v.pipe(v.array(FieldMappingSchema), v.maxLength(200)), []);

/** An input step's name (`$sources.<name>`): letters, digits, `_` and `-` (the origin platform writes `fetch-data`). */
export const STEP_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

export const InputSourceSchema = v.variant('type', [
  /**
   * A bundled STF library (`pdf-lib`, `@d6e-ai/pdf-lib`) as `{ code, types, version }`. A name that is no bundled
   * library but a table name reads that table like `Table` (what `Library` meant before; noted in the run record).
   * Which it is gets checked when the workflow is saved (check.ts).
   */
  v.strictObject({
    type: v.literal('Library'),
    name: v.pipe(v.string(), v.regex(/^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9_][a-z0-9._-]{0,213}$/, 'must be a library or table name')),
  }),
  /** The rows of a workspace table (by logical name), read with the executing user's policies. */
  v.strictObject({ type: v.literal('Table'), name: v.pipe(v.string(), v.regex(LOGICAL_NAME, 'must be a table name')) }),
  v.strictObject({ type: v.literal('File'), id: Uuid }),
  v.strictObject({
    type: v.literal('Fetch'),
    url: v.pipe(v.string(), v.url('must be a URL')),
    method: v.optional(v.picklist(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'], 'must be an HTTP method')),
    headers: v.optional(v.record(v.string(), v.string())),
    body: v.optional(v.unknown()),
    timeout_secs: v.optional(v.pipe(v.number(), v.minValue(1), v.maxValue(60))),
  }),
]);

export const InputStepSchema = v.strictObject({
  name: v.pipe(v.string(), v.regex(STEP_NAME, 'must be 1-64 letters, digits, _ or - (not starting with -)')),
  source: InputSourceSchema,
});

export const StfStepSchema = v.strictObject({
  stf_version_id: Uuid,
  pin_version: v.optional(v.boolean(), false),
  input_mappings: Mappings,
});

export const EffectStepSchema = v.strictObject({
  effect_version_id: Uuid,
  pin_version: v.optional(v.boolean(), false),
  input_mappings: Mappings,
});

const Steps = {
  input_schema: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
  allow_anonymous_execute: v.optional(v.boolean()),
  input_steps: v.optional(v.pipe(v.array(InputStepSchema), v.maxLength(20)), []),
  stf_steps: v.optional(v.pipe(v.array(StfStepSchema), v.maxLength(50)), []),
  effect_steps: v.optional(v.pipe(v.array(EffectStepSchema), v.maxLength(20)), []),
};

export const CreateWorkflowSchema = v.strictObject({
  name: Name,
  description: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(10_000)))),
  ...Steps,
});

/** PATCH: any field; steps given replace the saved ones (each list as a whole). */
export const UpdateWorkflowSchema = v.strictObject({
  name: v.optional(Name),
  description: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(10_000)))),
  input_schema: Steps.input_schema,
  allow_anonymous_execute: v.optional(v.boolean()),
  input_steps: v.optional(v.pipe(v.array(InputStepSchema), v.maxLength(20))),
  stf_steps: v.optional(v.pipe(v.array(StfStepSchema), v.maxLength(50))),
  effect_steps: v.optional(v.pipe(v.array(EffectStepSchema), v.maxLength(20))),
});

export type FieldMapping = v.InferOutput<typeof FieldMappingSchema>;
export type InputSource = v.InferOutput<typeof InputSourceSchema>;
export type InputStep = v.InferOutput<typeof InputStepSchema>;
export type StfStep = v.InferOutput<typeof StfStepSchema>;
export type EffectStep = v.InferOutput<typeof EffectStepSchema>;
export type CreateWorkflow = v.InferOutput<typeof CreateWorkflowSchema>;
export type UpdateWorkflow = v.InferOutput<typeof UpdateWorkflowSchema>;

/** What is stored in `platform.workflows.definition` (name, description and the anonymous flag are columns). */
export interface WorkflowDefinition {
  input_schema: Record<string, unknown> | null;
  input_steps: InputStep[];
  stf_steps: StfStep[];
  effect_steps: EffectStep[];
}
