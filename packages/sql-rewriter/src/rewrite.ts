import { ServiceError } from '@wds/errors';
import { deparseSync } from 'pgsql-deparser';
import { type Analysis, type Operation, type TableRef, dropName } from './analyze.js';
import { TRUE, ZERO, and, call, caseWhen, col, eq, isNull, replaceWrapper, resTarget, star, str, text, wrappers } from './ast.js';
import { guardedWhere, simpleConjuncts } from './guards.js';
import { assertRoundTrip, firstDifference } from './verify.js';
import { USER_SCHEMA, physicalName, workspacePrefix } from './names.js';
import { type AnyNode, parseOne } from './parse.js';

/** Columns of each existing workspace table, by logical name (tables that do not exist are absent). */
export type Catalog = ReadonlyMap<string, ReadonlySet<string>>;

/** The row filter of a (table, operation), as an expression over columns qualified by `qualifier`; null is TRUE. */
export type FilterFn = (table: string, operation: Operation, qualifier: string) => AnyNode | null;

export interface RewriteOptions {
  workspaceId: string;
  catalog: Catalog;
  /** Without it (preview), no policy predicates are injected; soft deletes and name mapping still apply. */
  filter?: FilterFn;
}

/** Name of the function that aborts a write whose new row leaves the policy filter. */
export const ROW_CHECK_FUNCTION = 'wds_row_check';
export const ROW_CHECK_COLUMN = '__wds_check';

/**
 * Rewrites an analysed statement for one workspace: logical → physical names, policy predicates on every table
 * reference, soft deletes, `updated_at`, system columns of new tables, scoped information_schema.
 * Pure: the analysis is left as it was (preview and execute rewrite one parse twice). The returned text has been
 * parsed again and is exactly the rewritten tree (see verify.ts).
 */
export function rewrite(analysis: Analysis, opts: RewriteOptions): string {
  // One structuredClone of the whole analysis keeps its references into the tree pointing into the copy.
  const a = structuredClone(analysis);
  const wrap = wrappers(a.parsed.tree);
  const filter = opts.filter ?? (() => null);
  const has = (table: string, column: string) => opts.catalog.get(table)?.has(column) ?? false;

  for (const ref of a.refs) {
    switch (ref.role) {
      case 'info_schema':
        replaceInfoSchema(ref, wrap, opts.workspaceId);
        break;
      case 'read':
        rewriteRead(ref, wrap, opts.workspaceId, opts.catalog.get(ref.table), [
          filter(ref.table, 'select', ref.table),
          has(ref.table, 'deleted_at') ? isNull(col(ref.table, 'deleted_at')) : undefined,
        ]);
        break;
      case 'update':
      case 'delete':
      case 'insert':
        rewriteWrite(ref, wrap, opts, filter, has);
        break;
      case 'ddl':
        ref.node.schemaname = USER_SCHEMA;
        ref.node.relname = physicalName(opts.workspaceId, ref.table);
        break;
    }
  }
  for (const { node, field, what } of a.objectNames) node[field] = physicalName(opts.workspaceId, node[field], what);
  for (const drop of a.dropLists) {
    drop.objects = (drop.objects ?? []).map((obj: AnyNode) => ({
      List: { items: [str(USER_SCHEMA), str(physicalName(opts.workspaceId, dropName(obj)))] },
    }));
  }
  if (a.parsed.tag === 'CreateStmt') addSystemColumns(a.parsed.stmt.CreateStmt);
  let sql: string;
  try {
    sql = deparseSync(a.parsed.tree, { pretty: false });
  } catch (err) {
    // The deparser knows fewer node kinds than the parser (e.g. SQL/JSON functions): refuse, never guess.
    throw new ServiceError('UNSUPPORTED', 'Unsupported SQL: a construct this service cannot rewrite', (err as Error).message);
  }
  assertRoundTrip(a.parsed.tree.stmts[0].stmt, sql);
  return sql;
}

function rewriteRead(
  ref: TableRef,
  wrap: Map<AnyNode, AnyNode>,
  workspaceId: string,
  columns: ReadonlySet<string> | undefined,
  preds: (AnyNode | null | undefined)[],
) {
  const rv = ref.node;
  const physical = physicalName(workspaceId, ref.table);
  const alias = rv.alias ?? { aliasname: ref.table };
  const where = and(preds as AnyNode[]);
  if (!where) {
    Object.assign(rv, { schemaname: USER_SCHEMA, relname: physical, alias });
    return;
  }
  // The filtered table becomes a fenced subquery under the same alias, so the filter holds wherever the table is
  // used (joins, also outer; subqueries, CTEs, set operations, LATERAL) and runs before any user expression.
  const wrapper = wrap.get(rv);
  if (!wrapper) throw new ServiceError('INTERNAL_ERROR', 'table reference without a node wrapper');
  const copies = ref.owner && columns ? simpleConjuncts(ref.owner.whereClause, alias.aliasname, ref.table, columns) : [];
  replaceWrapper(wrapper, 'RangeSubselect', {
    subquery: {
      SelectStmt: {
        targetList: [resTarget(star())],
        fromClause: [
          { RangeVar: { schemaname: USER_SCHEMA, relname: physical, inh: rv.inh ?? true, relpersistence: 'p', alias: { aliasname: ref.table } } },
        ],
        whereClause: and([where, ...copies]),
        limitOffset: ZERO,
        limitOption: 'LIMIT_OPTION_COUNT',
        op: 'SETOP_NONE',
      },
    },
    alias,
  });
}

function rewriteWrite(
  ref: TableRef,
  wrap: Map<AnyNode, AnyNode>,
  opts: RewriteOptions,
  filter: FilterFn,
  has: (table: string, column: string) => boolean,
) {
  const rv = ref.node;
  const stmt = ref.owner as AnyNode;
  const q = rv.alias?.aliasname ?? ref.table;
  rv.alias ??= { aliasname: ref.table };
  rv.schemaname = USER_SCHEMA;
  rv.relname = physicalName(opts.workspaceId, ref.table);
  const returning = (stmt.returningClause?.exprs?.length ?? 0) > 0;
  const checks: AnyNode[] = [];
  const check = (operation: Operation) => {
    const f = filter(ref.table, operation, q);
    if (f) checks.push(call([USER_SCHEMA, ROW_CHECK_FUNCTION], [f, text(`${ref.table}:${operation}`)]));
  };
  const live = has(ref.table, 'deleted_at') ? isNull(col(q, 'deleted_at')) : undefined;
  const columns = opts.catalog.get(ref.table) ?? new Set<string>();
  // UPDATE and DELETE touch only rows the caller may also select (as PostgreSQL's RLS does for statements that
  // read the rows): their WHERE, SET and RETURNING never see a hidden row, and counts never include one.
  const readable = (operation: Operation) => {
    const own = filter(ref.table, operation, q);
    const select = filter(ref.table, 'select', q);
    const same = own && select && firstDifference(own, select) === undefined;
    return and([own, same ? undefined : select, live]);
  };
  const protect = (userWhere: AnyNode, operation: Operation) =>
    guardedWhere(userWhere, readable(operation), simpleConjuncts(userWhere, q, q, columns));
  const touch = (targetList: AnyNode[]) => {
    if (has(ref.table, 'updated_at') && !targetList.some((t) => t.ResTarget?.name === 'updated_at')) {
      targetList.push(resTarget(call(['now']), 'updated_at'));
    }
  };

  if (ref.role === 'update') {
    stmt.whereClause = protect(stmt.whereClause, 'update');
    stmt.targetList ??= [];
    touch(stmt.targetList);
    check('update');
  } else if (ref.role === 'delete') {
    stmt.whereClause = protect(stmt.whereClause, 'delete');
    if (live) {
      // Soft delete: DELETE becomes UPDATE … SET deleted_at = now().
      const wrapper = wrap.get(stmt);
      if (!wrapper) throw new ServiceError('INTERNAL_ERROR', 'DELETE without a node wrapper');
      const update: AnyNode = {
        relation: rv,
        targetList: [resTarget(call(['now']), 'deleted_at')],
        ...(stmt.usingClause ? { fromClause: stmt.usingClause } : {}),
        whereClause: stmt.whereClause,
        ...(stmt.returningClause ? { returningClause: stmt.returningClause } : {}),
        ...(stmt.withClause ? { withClause: stmt.withClause } : {}),
      };
      touch(update.targetList);
      replaceWrapper(wrapper, 'UpdateStmt', update);
      if (returning) {
        const f = filter(ref.table, 'select', q);
        if (f) prependRowCheck(update, call([USER_SCHEMA, ROW_CHECK_FUNCTION], [f, text(`${ref.table}:select`)]));
      }
      return;
    }
  } else {
    const conflict = stmt.onConflictClause;
    if (conflict?.action === 'ONCONFLICT_UPDATE') {
      // A soft-deleted row is never updated back to life by an upsert.
      conflict.whereClause = guardedWhere(conflict.whereClause, readable('update'), []);
      conflict.targetList ??= [];
      touch(conflict.targetList);
      // An upserted row is checked against the policy of what happened to it: xmax = 0 means inserted.
      const ins = filter(ref.table, 'insert', q);
      const upd = filter(ref.table, 'update', q);
      if (ins || upd) {
        const expr = caseWhen(eq(col(q, 'xmax'), ZERO), ins ?? TRUE, upd ?? TRUE);
        checks.push(call([USER_SCHEMA, ROW_CHECK_FUNCTION], [expr, text(`${ref.table}:insert/update`)]));
      }
    } else {
      check('insert');
    }
  }
  if (returning) check('select');
  if (checks.length) prependRowCheck(stmt, and(checks));
}

/** The row check goes first in RETURNING: the user's expressions are evaluated only for rows that passed it. */
function prependRowCheck(stmt: AnyNode, expr: AnyNode) {
  stmt.returningClause ??= { exprs: [] };
  stmt.returningClause.exprs.unshift(resTarget(expr, ROW_CHECK_COLUMN));
}

function replaceInfoSchema(ref: TableRef, wrap: Map<AnyNode, AnyNode>, workspaceId: string) {
  const prefix = workspacePrefix(workspaceId);
  const from = `FROM information_schema.${ref.table} c WHERE c.table_schema = '${USER_SCHEMA}' AND starts_with(c.table_name::text, '${prefix}')`;
  const strip = (e: string) => `substr(${e}::text, ${prefix.length + 1})`;
  // The prefix is derived from a UUID (hex digits and underscores), so it is safe inside these literals.
  const sql =
    ref.table === 'tables'
      ? `SELECT c.table_catalog::text AS table_catalog, 'public'::text AS table_schema, ${strip('c.table_name')} AS table_name, c.table_type::text AS table_type ${from}`
      : `SELECT c.table_catalog::text AS table_catalog, 'public'::text AS table_schema, ${strip('c.table_name')} AS table_name, c.column_name::text AS column_name, c.ordinal_position::int AS ordinal_position, regexp_replace(replace(c.column_default::text, '${USER_SCHEMA}.', ''), 'ws_[0-9a-f_]{36}_', '', 'g') AS column_default, c.is_nullable::text AS is_nullable, c.data_type::text AS data_type, c.character_maximum_length::int AS character_maximum_length, c.numeric_precision::int AS numeric_precision, c.numeric_scale::int AS numeric_scale, c.udt_name::text AS udt_name ${from}`;
  const wrapper = wrap.get(ref.node);
  if (!wrapper) throw new ServiceError('INTERNAL_ERROR', 'information_schema reference without a node wrapper');
  replaceWrapper(wrapper, 'RangeSubselect', { subquery: parseOne(sql).stmt, alias: ref.node.alias ?? { aliasname: ref.table } });
}

let systemColumns: { id: AnyNode; idUnique: AnyNode; rest: AnyNode[] } | undefined;
function templates() {
  if (!systemColumns) {
    const elts = (sql: string) => parseOne(sql).stmt.CreateStmt.tableElts.map((e: AnyNode) => e);
    const [id, created, updated, deleted] = elts(
      `CREATE TABLE t (id uuid PRIMARY KEY DEFAULT ${USER_SCHEMA}.uuidv7(), created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz)`,
    );
    const [idUnique] = elts(`CREATE TABLE t (id uuid NOT NULL UNIQUE DEFAULT ${USER_SCHEMA}.uuidv7())`);
    systemColumns = { id, idUnique, rest: [created, updated, deleted] };
  }
  return systemColumns;
}

/** CREATE TABLE gets id, created_at, updated_at and deleted_at unless the user defined them. */
function addSystemColumns(create: AnyNode) {
  create.tableElts ??= [];
  const elts: AnyNode[] = create.tableElts;
  const names = new Set(elts.map((e) => e.ColumnDef?.colname).filter(Boolean));
  const isPk = (c: AnyNode) => c?.Constraint?.contype === 'CONSTR_PRIMARY';
  const hasPk = elts.some((e) => isPk(e) || (e.ColumnDef?.constraints ?? []).some(isPk));
  const t = templates();
  const clone = (n: AnyNode) => structuredClone(n);
  if (!names.has('id')) elts.unshift(clone(hasPk ? t.idUnique : t.id));
  for (const c of t.rest) if (!names.has(c.ColumnDef.colname)) elts.push(clone(c));
}
