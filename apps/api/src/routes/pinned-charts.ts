import {
  type ChartActor,
  type ChartDeps,
  MAX_CHART_TYPE_CHARS,
  MAX_COLUMN_CHARS,
  MAX_DESCRIPTION_CHARS,
  MAX_DISPLAY_ORDER,
  MAX_SQL_CHARS,
  MAX_TITLE_CHARS,
  MAX_Y_COLUMNS,
  MIN_DISPLAY_ORDER,
  changePinnedChart,
  getPinnedChart,
  listPinnedCharts,
  pinChart,
  unpinChart,
} from '@wds/charts';
import * as v from 'valibot';
import { type MemberCtx, defineRoute } from '../http/route.js';
import { PinnedChart } from '../http/views/index.js';
import { boolQuery, pageEntries, withJsonSchema } from '../http/schemas.js';

/**
 * Pinned charts (docs/pinned-charts.md#permissions): header-scoped; members read and pin, the creator or an admin
 * changes.
 */

const str = (max: number, allowEmpty = false) =>
  v.pipe(
    v.string('must be a string'),
    withJsonSchema(v.check<string, string>((s) => allowEmpty || s.trim() !== '', 'must not be empty'), allowEmpty ? {} : { pattern: '\\S' }),
    v.maxLength(max, `at most ${max} characters`),
  );
const Fields = {
  title: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(MAX_TITLE_CHARS, `at most ${MAX_TITLE_CHARS} characters`)),
  sql_query: str(MAX_SQL_CHARS),
  chart_type: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(MAX_CHART_TYPE_CHARS, `at most ${MAX_CHART_TYPE_CHARS} characters`)),
  x_axis_column: v.optional(v.nullable(str(MAX_COLUMN_CHARS))),
  y_axis_columns: v.optional(
    v.nullable(v.pipe(v.array(str(MAX_COLUMN_CHARS), 'must be an array of column names'), v.maxLength(MAX_Y_COLUMNS, `at most ${MAX_Y_COLUMNS} columns`))),
  ),
  display_order: v.optional(
    v.pipe(
      v.number('must be an integer'),
      v.integer('must be an integer'),
      v.minValue(MIN_DISPLAY_ORDER, 'must fit a 32-bit integer'),
      v.maxValue(MAX_DISPLAY_ORDER, 'must fit a 32-bit integer'),
    ),
  ),
  description: v.optional(v.nullable(str(MAX_DESCRIPTION_CHARS, true))),
  is_visible: v.optional(v.boolean('must be true or false')),
};
const CreateChart = v.object(Fields);
const PatchChart = v.strictObject({
  title: v.optional(Fields.title),
  sql_query: v.optional(Fields.sql_query),
  chart_type: v.optional(Fields.chart_type),
  x_axis_column: Fields.x_axis_column,
  y_axis_columns: Fields.y_axis_columns,
  display_order: Fields.display_order,
  description: Fields.description,
  is_visible: Fields.is_visible,
});

const chartDeps = (ctx: MemberCtx): ChartDeps => ({ db: ctx.db });
const actor = (ctx: MemberCtx): ChartActor => ({ userId: ctx.principal.user.id, admin: ctx.access.role === 'admin' });

const common = { auth: 'user', workspace: 'header', role: 'member' } as const;

export const pinnedChartRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/pinned-charts',
    operation: 'list_pinned_charts',
    response: v.array(PinnedChart),
    summary: 'Visible pinned charts by display_order, then creation (include_hidden=true adds hidden ones)',
    query: v.object({ include_hidden: boolQuery('must be true or false'), ...pageEntries }),
    handler: ({ db, access, query }) =>
      listPinnedCharts(db, access.workspace.id, query, { includeHidden: query.include_hidden === 'true' }),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/pinned-charts',
    operation: 'create_pinned_chart',
    response: PinnedChart,
    summary: 'Pin a chart: { title, sql_query, chart_type, x_axis_column?, y_axis_columns?, display_order?, description?, is_visible? }',
    body: CreateChart,
    status: 201,
    handler: async (ctx) => {
      const c = await pinChart(chartDeps(ctx), ctx.access.workspace.id, { ...ctx.body, createdBy: ctx.principal.user.id });
      ctx.audit({ details: { title: c.title, chart_type: c.chart_type } });
      return c;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/pinned-charts/:chartId',
    operation: 'get_pinned_chart',
    response: PinnedChart,
    summary: 'A pinned chart (hidden ones too)',
    handler: ({ db, access, params }) => getPinnedChart(db, access.workspace.id, params.chartId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: '/api/v1/pinned-charts/:chartId',
    operation: 'update_pinned_chart',
    response: PinnedChart,
    summary: "Change a chart's fields (its creator or an admin); null clears an optional field",
    body: PatchChart,
    handler: async (ctx) => {
      const c = await changePinnedChart(chartDeps(ctx), ctx.access.workspace.id, ctx.params.chartId, ctx.body, actor(ctx));
      ctx.audit({ details: { title: c.title, changed: Object.keys(ctx.body) } });
      return c;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: '/api/v1/pinned-charts/:chartId',
    operation: 'delete_pinned_chart',
    summary: 'Unpin (soft-delete) a chart (its creator or an admin)',
    status: 204,
    handler: async (ctx) => {
      const c = await unpinChart(ctx.db, ctx.access.workspace.id, ctx.params.chartId, actor(ctx));
      ctx.audit({ resourceId: c.id, details: { title: c.title } });
    },
  }),
];
