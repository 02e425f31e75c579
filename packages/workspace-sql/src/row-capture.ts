import { type Filter, compileFilter } from '@wds/policy-engine';
import { loadParser, parseOne, physicalName, printVerified } from '@wds/sql-rewriter';
import type pg from 'pg';

/**
 * Row capture (migration 0016_row_changes): the triggers every workspace table carries, and the one question asked of
 * a captured row — would this subject's select policy let them see it, and as what.
 */

/** The capture triggers of a table, as the migration names them. */
const TRIGGERS = [
  ['wds_capture_insert', 'INSERT', 'REFERENCING NEW TABLE AS wds_new_rows'],
  ['wds_capture_update', 'UPDATE', 'REFERENCING OLD TABLE AS wds_old_rows NEW TABLE AS wds_new_rows'],
  ['wds_capture_delete', 'DELETE', 'REFERENCING OLD TABLE AS wds_old_rows'],
] as const;

const PHYSICAL = /^ws_[0-9a-f_]{36}_[a-z0-9_]+$/;

/**
 * Gives every table of the connection's workspace role that lacks them the capture triggers. Runs as the workspace
 * role in the transaction of a DDL statement (before its COMMIT), so a table exists exactly with its triggers: no
 * write to it can go uncaptured. One catalog query when nothing is missing (most DDL).
 */
export async function installRowCapture(client: pg.ClientBase): Promise<number> {
  // The session's search_path is pg_catalog alone: unqualified operators are the built-in ones.
  const { rows } = await client.query<{ relname: string }>(
    `SELECT c.relname FROM pg_catalog.pg_class c
      WHERE c.relnamespace = 'user_data'::pg_catalog.regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND c.relowner = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER)
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = 'wds_capture_insert')`,
  );
  for (const { relname } of rows) {
    if (!PHYSICAL.test(relname)) continue; // only our own names, which need no quoting beyond the double quotes
    for (const [name, event, referencing] of TRIGGERS) {
      await client.query(
        `CREATE TRIGGER ${name} AFTER ${event} ON user_data."${relname}" ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION user_data.wds_capture_rows()`,
      );
    }
  }
  return rows.length;
}

/**
 * The statement that applies a select filter to captured rows: `$1` a JSON array of row images (as `to_jsonb` of the
 * table's rows wrote them), the answer one row per image the filter admits — its position in `$1` (1-based) first,
 * then the table's columns, typed as the table types them. The filter is compiled exactly as the rewriter compiles it
 * for a read of the table (compileFilter), with the read's `deleted_at IS NULL` when the table has that column
 * (`softDelete`), printed and checked to parse back to the same tree.
 */
export async function visibleRowsStatement(
  workspaceId: string,
  table: string,
  filter: Filter | null,
  userId: string | null,
  softDelete: boolean,
): Promise<string> {
  const { tree, select } = await capturedRowsSelect(workspaceId, table);
  const where: Filter | null = softDelete ? (filter ? { kind: 'and', args: [filter, LIVE] } : LIVE) : filter;
  select.whereClause = compileFilter(where, { qualifier: 't', userId });
  return printVerified(tree);
}

/** A read skips soft-deleted rows (the rewriter's rule for a table with deleted_at): so do these statements. */
const LIVE: Filter = { kind: 'null', column: 'deleted_at', isNull: true };

/**
 * The parsed `SELECT o.i, t.* … WHERE true` over `$1`'s images as rows of the table (its physical name from
 * physicalName, which refuses anything but a logical name), for the statements above and below to fill in.
 */
async function capturedRowsSelect(workspaceId: string, table: string) {
  await loadParser();
  const physical = physicalName(workspaceId, table);
  const parsed = parseOne(
    `SELECT o.i, t.* FROM pg_catalog.jsonb_array_elements($1::pg_catalog.jsonb) WITH ORDINALITY AS o(e, i), LATERAL pg_catalog.jsonb_populate_record(NULL::user_data."${physical}", o.e) AS t WHERE true`,
  );
  return { tree: parsed.tree, select: (parsed.stmt as { SelectStmt: { targetList: unknown[]; whereClause: unknown } }).SelectStmt };
}

/**
 * visibleRowsStatement for several subjects of one workspace at once (realtime: every subscriber of a table): the
 * position first, then one boolean per subject — their select filter over the row, compiled as for their own reads,
 * NULL counting as not admitted — then the table's columns. Every image a read would not skip as soft-deleted comes
 * back, whoever may see it: the caller gives each subject only the rows its own boolean admits.
 */
export async function visibleRowsForStatement(
  workspaceId: string,
  table: string,
  subjects: readonly { filter: Filter | null; userId: string | null }[],
  softDelete: boolean,
): Promise<string> {
  const { tree, select } = await capturedRowsSelect(workspaceId, table);
  const [position, columns] = select.targetList;
  const admitted = subjects.map((s) => ({ ResTarget: { val: compileFilter(s.filter, { qualifier: 't', userId: s.userId }) } }));
  select.targetList = [position, ...admitted, columns];
  if (softDelete) select.whereClause = compileFilter(LIVE, { qualifier: 't', userId: null });
  return printVerified(tree);
}

/** A captured row whose JSON text is longer than this travels as its policy columns only (`capturedImagesSql`). */
export const MAX_CAPTURED_IMAGE_BYTES = 256 * 1024;

/**
 * The select list that reads captured images from `platform.row_changes rc` for filtering (visibleRows): `row` and
 * `old` as JSON text, `row_truncated`/`old_truncated` when the image was too long to read whole. A long image is
 * replaced by one of its `id`, `deleted_at` and the columns some policy of its table names — all a select filter can
 * look at — or by NULL (visible to nobody) when one of those is itself longer than 64 KiB. So a reader's memory is
 * bounded by the image limit whatever a tenant writes, and the decision stays PostgreSQL's; the row itself is then
 * delivered by reference (its id). `size` is what the chunk budget counts.
 */
export function capturedImagesSql(maxBytes = MAX_CAPTURED_IMAGE_BYTES): string {
  const max = Math.max(1024, Math.floor(maxBytes));
  const image = (col: 'row' | 'old') => `CASE
      WHEN rc.${col} IS NULL THEN NULL
      WHEN octet_length(rc.${col}::text) <= ${max} THEN rc.${col}::text
      ELSE (SELECT CASE WHEN bool_or(octet_length(e.value::text) > 65536) THEN NULL ELSE jsonb_object_agg(e.key, e.value)::text END
              FROM jsonb_each(rc.${col}) e
             WHERE e.key IN ('id', 'deleted_at')
                OR e.key IN (SELECT jsonb_object_keys(p.condition) FROM platform.policies p
                              WHERE p.workspace_id = rc.workspace_id AND p.table_name = rc.table_name AND jsonb_typeof(p.condition) = 'object'))
    END AS ${col}, coalesce(octet_length(rc.${col}::text) > ${max}, false) AS ${col}_truncated`;
  return `${image('row')}, ${image('old')},
    least(coalesce(octet_length(rc.row::text), 0), ${max}) + least(coalesce(octet_length(rc.old::text), 0), ${max}) AS size`;
}
