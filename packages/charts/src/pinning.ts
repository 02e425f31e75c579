/**
 * Pinning, changing and unpinning charts as a workspace member: the stored query must be one the SQL endpoint
 * would run for a chart, and only the chart's creator or a workspace admin changes or removes it.
 */
import type { Db, Uuid } from '@wds/db';
import { ServiceError, forbidden, validationError } from '@wds/errors';
import { analyze, loadParser } from '@wds/sql-rewriter';
import type { PinnedChartView } from './views.js';
import {
  type PinnedChartFields,
  type PinnedChartPatch,
  createPinnedChart,
  getPinnedChart,
  softDeletePinnedChart,
  updatePinnedChart,
} from './charts.js';

/** What the check needs of the SQL parser; @wds/sql-rewriter's `loadParser` and `analyze` fit as they are. */
export interface ChartSqlParser {
  loadParser(): Promise<void>;
  /** Throws a ServiceError for SQL the SQL endpoint refuses. */
  analyze(sql: string): { kind: string; writes: boolean };
}

/** The SQL endpoint's own parser and rules. */
const SQL_ENDPOINT_PARSER: ChartSqlParser = { loadParser, analyze };

export interface ChartDeps {
  db: Db;
  /** Defaults to the SQL endpoint's parser (@wds/sql-rewriter). */
  sqlParser?: ChartSqlParser;
}

/** Who changes a chart. */
export interface ChartActor {
  userId: string;
  /** A workspace admin. */
  admin: boolean;
}

/**
 * The query is only stored (the client runs it through the SQL endpoint), but it must be what that endpoint will
 * run for a chart: one SELECT that writes nothing. Checked with the same parser and rules (no tables are resolved:
 * a chart may be pinned before its table exists). A refusal is 400 VALIDATION_ERROR `sql_query: …`.
 */
export async function checkChartSql(parser: ChartSqlParser, sql: string): Promise<void> {
  await parser.loadParser();
  let a: ReturnType<ChartSqlParser['analyze']>;
  try {
    a = parser.analyze(sql);
  } catch (err) {
    if (err instanceof ServiceError) throw validationError(`sql_query: ${err.message}${err.details ? ` (${err.details})` : ''}`);
    throw err;
  }
  if (a.kind !== 'select' || a.writes) throw validationError('sql_query: must be one SELECT statement that writes nothing');
}

/** The chart's creator or a workspace admin may change or delete it (403 otherwise). */
export function assertCanChangeChart(actor: ChartActor, chart: PinnedChartView): void {
  if (!actor.admin && chart.created_by !== actor.userId) {
    throw forbidden("Only the chart's creator or a workspace admin can change it");
  }
}

/** Pins a chart whose query passes `checkChartSql`. */
export async function pinChart(
  deps: ChartDeps,
  workspaceId: string,
  input: PinnedChartFields & { createdBy: string | null },
): Promise<PinnedChartView> {
  await checkChartSql(deps.sqlParser ?? SQL_ENDPOINT_PARSER, input.sql_query);
  return createPinnedChart(deps.db, workspaceId, input);
}

/** Changes a live chart as `actor` (404 for none, 403 for someone else's); a new query passes `checkChartSql`. */
export async function changePinnedChart(
  deps: ChartDeps,
  workspaceId: string,
  id: Uuid,
  patch: PinnedChartPatch,
  actor: ChartActor,
): Promise<PinnedChartView> {
  assertCanChangeChart(actor, await getPinnedChart(deps.db, workspaceId, id));
  if (patch.sql_query !== undefined) await checkChartSql(deps.sqlParser ?? SQL_ENDPOINT_PARSER, patch.sql_query);
  return updatePinnedChart(deps.db, workspaceId, id, patch);
}

/** Unpins (soft-deletes) a live chart as `actor` (404 for none, 403 for someone else's). */
export async function unpinChart(db: Db, workspaceId: string, id: Uuid, actor: ChartActor): Promise<PinnedChartView> {
  assertCanChangeChart(actor, await getPinnedChart(db, workspaceId, id));
  return softDeletePinnedChart(db, workspaceId, id);
}
