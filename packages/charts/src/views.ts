import { field } from '@wds/db';
import * as v from 'valibot';

/** The view of a pinned chart: what the API answers (apps/api re-exports it). */
export const PinnedChartView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  title: v.string(),
  sql_query: v.string(),
  chart_type: v.string(),
  x_axis_column: v.nullable(v.string()),
  y_axis_columns: v.nullable(v.array(v.string())),
  display_order: field.Integer,
  description: v.nullable(v.string()),
  is_visible: v.boolean(),
  created_by: v.nullable(field.Uuid),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type PinnedChartView = v.InferOutput<typeof PinnedChartView>;
