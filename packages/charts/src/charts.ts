import { type Db, type PinnedChartRow, newId, type Uuid } from '@wds/db';
import { notFound, validationError } from '@wds/errors';
import type { PinnedChartView } from './views.js';

export const MAX_TITLE_CHARS = 255;
export const MAX_SQL_CHARS = 20_000;
export const MAX_CHART_TYPE_CHARS = 50;
export const MAX_COLUMN_CHARS = 255;
export const MAX_Y_COLUMNS = 50;
export const MAX_DESCRIPTION_CHARS = 10_000;
/** display_order is a PostgreSQL integer. */
export const MIN_DISPLAY_ORDER = -2_147_483_648;
export const MAX_DISPLAY_ORDER = 2_147_483_647;

export interface PinnedChartFields {
  title: string;
  sql_query: string;
  chart_type: string;
  x_axis_column?: string | null | undefined;
  y_axis_columns?: string[] | null | undefined;
  display_order?: number | undefined;
  description?: string | null | undefined;
  is_visible?: boolean | undefined;
}

export type PinnedChartPatch = Partial<PinnedChartFields>;

const toStrings = (v: unknown): string[] | null => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : null);

const view = (r: PinnedChartRow): PinnedChartView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  title: r.title,
  sql_query: r.sql_query,
  chart_type: r.chart_type,
  x_axis_column: r.x_axis_column,
  y_axis_columns: toStrings(r.y_axis_columns),
  display_order: r.display_order,
  description: r.description,
  is_visible: r.is_visible,
  created_by: r.created_by,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

function text(field: string, v: string, max: number, allowEmpty = false): void {
  if (!allowEmpty && v.trim() === '') throw validationError(`${field}: must not be empty`);
  if (v.length > max) throw validationError(`${field}: at most ${max} characters`);
}

/** The storage rules of each field given (the API checks the same with its schemas; this guards other callers). */
export function checkChartFields(f: PinnedChartPatch): void {
  if (f.title !== undefined) text('title', f.title, MAX_TITLE_CHARS);
  if (f.sql_query !== undefined) text('sql_query', f.sql_query, MAX_SQL_CHARS);
  if (f.chart_type !== undefined) text('chart_type', f.chart_type, MAX_CHART_TYPE_CHARS);
  if (f.x_axis_column !== undefined && f.x_axis_column !== null) text('x_axis_column', f.x_axis_column, MAX_COLUMN_CHARS);
  if (f.y_axis_columns !== undefined && f.y_axis_columns !== null) {
    if (f.y_axis_columns.length > MAX_Y_COLUMNS) throw validationError(`y_axis_columns: at most ${MAX_Y_COLUMNS} columns`);
    for (const [i, c] of f.y_axis_columns.entries()) text(`y_axis_columns.${i}`, c, MAX_COLUMN_CHARS);
  }
  if (f.description !== undefined && f.description !== null) text('description', f.description, MAX_DESCRIPTION_CHARS, true);
  if (f.display_order !== undefined) {
    const o = f.display_order;
    if (!Number.isInteger(o) || o < MIN_DISPLAY_ORDER || o > MAX_DISPLAY_ORDER) {
      throw validationError('display_order: must be an integer within the 32-bit range');
    }
  }
}

const jsonColumns = (c: string[] | null | undefined) => (c === undefined ? undefined : c === null ? null : JSON.stringify(c));

const live = (db: Db, workspaceId: string) =>
  db.selectFrom('platform.pinned_charts').selectAll().where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);

/**
 * Charts of the workspace ordered by display_order, then creation. Only visible ones unless `includeHidden`.
 */
export async function listPinnedCharts(
  db: Db,
  workspaceId: string,
  page: { limit: number; offset: number },
  opts: { includeHidden?: boolean } = {},
): Promise<PinnedChartView[]> {
  let q = live(db, workspaceId);
  if (!opts.includeHidden) q = q.where('is_visible', '=', true);
  const rows = await q.orderBy('display_order').orderBy('id').limit(page.limit).offset(page.offset).execute();
  return rows.map(view);
}

/** A live chart of the workspace, visible or not. */
export async function getPinnedChart(db: Db, workspaceId: string, id: Uuid): Promise<PinnedChartView> {
  const row = await live(db, workspaceId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Pinned chart');
  return view(row);
}

export async function createPinnedChart(
  db: Db,
  workspaceId: string,
  input: PinnedChartFields & { createdBy: string | null },
): Promise<PinnedChartView> {
  checkChartFields(input);
  const row = await db
    .insertInto('platform.pinned_charts')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      title: input.title,
      sql_query: input.sql_query,
      chart_type: input.chart_type,
      x_axis_column: input.x_axis_column ?? null,
      y_axis_columns: jsonColumns(input.y_axis_columns) ?? null,
      ...(input.display_order !== undefined ? { display_order: input.display_order } : {}),
      description: input.description ?? null,
      ...(input.is_visible !== undefined ? { is_visible: input.is_visible } : {}),
      created_by: input.createdBy,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return view(row);
}

export async function updatePinnedChart(db: Db, workspaceId: string, id: Uuid, patch: PinnedChartPatch): Promise<PinnedChartView> {
  checkChartFields(patch);
  const values = Object.fromEntries(
    Object.entries({
      title: patch.title,
      sql_query: patch.sql_query,
      chart_type: patch.chart_type,
      x_axis_column: patch.x_axis_column,
      y_axis_columns: jsonColumns(patch.y_axis_columns),
      display_order: patch.display_order,
      description: patch.description,
      is_visible: patch.is_visible,
    }).filter(([, v]) => v !== undefined),
  );
  const row = await db
    .updateTable('platform.pinned_charts')
    .set({ ...values, updated_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Pinned chart');
  return view(row);
}

/** Soft delete: the chart answers 404 and leaves lists afterwards. */
export async function softDeletePinnedChart(db: Db, workspaceId: string, id: Uuid): Promise<PinnedChartView> {
  const row = await db
    .updateTable('platform.pinned_charts')
    .set({ deleted_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Pinned chart');
  return view(row);
}
