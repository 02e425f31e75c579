import { field } from '@wds/db';
import { FieldMappingView } from '@wds/effect-runner';
import * as v from 'valibot';

/** The views of effects and their versions: what the API answers (apps/api re-exports them). */

const Mappings = v.array(FieldMappingView);

export const EffectVersionView = v.object({
  id: field.Uuid,
  effect_id: field.Uuid,
  version: v.string(),
  url: v.string(),
  method: v.string(),
  header_mappings: Mappings,
  body_mappings: Mappings,
  query_mappings: Mappings,
  input_schema: v.unknown(),
  /** Null: the run-time default (30 s). */
  timeout_secs: v.nullable(field.Integer),
  retries: field.NonNegative,
  created_at: field.Timestamp,
});
export type EffectVersionView = v.InferOutput<typeof EffectVersionView>;

export const EffectView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  name: v.string(),
  description: v.nullable(v.string()),
  latest_version: v.nullable(v.object({ id: field.Uuid, version: v.string(), method: v.string(), url: v.string() })),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type EffectView = v.InferOutput<typeof EffectView>;

/** create_effect: the effect with its first version. */
export const EffectCreatedView = v.object({ ...EffectView.entries, version: EffectVersionView });
export type EffectCreatedView = v.InferOutput<typeof EffectCreatedView>;
