import { field } from '@wds/db';
import { RUNTIME_NAMES } from '@wds/stf-runtime';
import * as v from 'valibot';

/** The views of STFs, their versions and their secrets: what the API answers (apps/api re-exports them). */

export const RuntimeNameView = v.picklist(RUNTIME_NAMES);

export const StfVersionView = v.object({
  id: field.Uuid,
  stf_id: field.Uuid,
  version: v.string(),
  runtime: RuntimeNameView,
  /** Base64, as uploaded. */
  code: v.string(),
  input_schema: v.unknown(),
  output_schema: v.unknown(),
  created_at: field.Timestamp,
});
export type StfVersionView = v.InferOutput<typeof StfVersionView>;

export const StfView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  name: v.string(),
  description: v.nullable(v.string()),
  is_public: v.boolean(),
  latest_version: v.nullable(v.object({ id: field.Uuid, version: v.string(), runtime: RuntimeNameView })),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type StfView = v.InferOutput<typeof StfView>;

/** create_stf: the STF with its first version. */
export const StfCreatedView = v.object({ ...StfView.entries, version: StfVersionView });
export type StfCreatedView = v.InferOutput<typeof StfCreatedView>;

/** An STF secret as listed: its name only, the value is write-only. */
export const SecretKeyView = v.object({ env_key: v.string(), created_at: field.Timestamp, updated_at: field.Timestamp });
export type SecretKeyView = v.InferOutput<typeof SecretKeyView>;
