import { field } from '@wds/db';
import type { Operation, PolicyMode } from '@wds/policy-engine';
import * as v from 'valibot';

/** The views of policies and policy groups: what the API answers (apps/api re-exports them). */

export const PolicyGroupView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  name: v.string(),
  user_ids: v.array(field.Uuid),
  stf_ids: v.array(field.Uuid),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type PolicyGroupView = v.InferOutput<typeof PolicyGroupView>;

export const PolicyView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  name: v.string(),
  policy_group_id: field.Uuid,
  mode: v.picklist(['allow', 'deny'] as const satisfies readonly PolicyMode[]),
  table_name: v.string(),
  operation: v.picklist(['select', 'insert', 'update', 'delete'] as const satisfies readonly Operation[]),
  /** The condition in its normal form (every column an object of operators), or null. */
  condition: v.unknown(),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type PolicyView = v.InferOutput<typeof PolicyView>;
