import { ServiceError } from '@wds/errors';
import type { Operation, TableRef } from './analyze.js';
import type { DeleteStmt, InsertStmt, Node, ReturningClause, UpdateStmt } from '@pgsql/types';
import { TRUE, type Wrappers, ZERO, and, as, call, caseWhen, col, eq, isNull, replaceWrapper, resTarget, star, text } from './ast.js';
import { guardedWhere, simpleConjuncts } from './guards.js';
import { USER_SCHEMA, physicalName } from './names.js';
import { firstDifference } from './verify.js';
import type { Columns, FilterFn, RewriteOptions } from './rewrite.js';

/**
 * The policy pass: every table reference gets the caller's row filter and, on tables with `deleted_at`, the
 * soft-delete predicate; writes get their guarded WHERE, the row checks in RETURNING and `updated_at`; DELETE on a
 * soft-delete table becomes an UPDATE of `deleted_at`.
 */

/** Name of the function that aborts a write whose new row leaves the policy filter. */
export const ROW_CHECK_FUNCTION = 'wds_row_check';
export const ROW_CHECK_COLUMN = '__wds_check';

export function rewriteRead(
  ref: TableRef,
  wrap: Wrappers,
  workspaceId: string,
  columns: Columns | undefined,
  preds: (Node | null | undefined)[],
) {
  const rv = ref.node;
  const physical = physicalName(workspaceId, ref.table);
  const alias = rv.alias ?? { aliasname: ref.table };
  const where = and(preds);
  if (!where) {
    Object.assign(rv, { schemaname: USER_SCHEMA, relname: physical, alias });
    return;
  }
  // The filtered table becomes a fenced subquery under the same alias, so the filter holds wherever the table is
  // used (joins, also outer; subqueries, CTEs, set operations, LATERAL) and runs before any user expression.
  const wrapper = wrap.get(rv);
  if (!wrapper) throw new ServiceError('INTERNAL_ERROR', 'table reference without a node wrapper');
  const owner = ref.owner;
  // Column aliases (`orders AS o(x, y)`) rename the columns the user's WHERE sees: then nothing is copied.
  const copies =
    owner && 'whereClause' in owner && columns && !alias.colnames?.length
      ? simpleConjuncts(owner.whereClause, alias.aliasname ?? ref.table, ref.table, columns)
      : [];
  replaceWrapper(wrapper, {
    RangeSubselect: {
      subquery: {
        SelectStmt: {
          targetList: [resTarget(star())],
          fromClause: [
            { RangeVar: { schemaname: USER_SCHEMA, relname: physical, inh: rv.inh ?? true, relpersistence: 'p', alias: { aliasname: ref.table } } },
          ],
          ...whereOf(and([where, ...copies])),
          limitOffset: ZERO,
          limitOption: 'LIMIT_OPTION_COUNT',
          op: 'SETOP_NONE',
        },
      },
      alias,
    },
  });
}

const whereOf = (whereClause: Node | undefined) => (whereClause ? { whereClause } : {});

export function rewriteWrite(
  ref: TableRef,
  wrap: Wrappers,
  opts: RewriteOptions,
  filter: FilterFn,
  has: (table: string, column: string) => boolean,
) {
  const rv = ref.node;
  const q = rv.alias?.aliasname ?? ref.table;
  rv.alias ??= { aliasname: ref.table };
  rv.schemaname = USER_SCHEMA;
  rv.relname = physicalName(opts.workspaceId, ref.table);
  const checks: Node[] = [];
  const check = (operation: Operation) => {
    const f = filter(ref.table, operation, q);
    if (f) checks.push(call([USER_SCHEMA, ROW_CHECK_FUNCTION], [f, text(`${ref.table}:${operation}`)]));
  };
  const live = has(ref.table, 'deleted_at') ? isNull(col(q, 'deleted_at')) : undefined;
  const columns: Columns = opts.catalog.get(ref.table) ?? new Map();
  // UPDATE and DELETE touch only rows the caller may also select (as PostgreSQL's RLS does for statements that
  // read the rows): their WHERE, SET and RETURNING never see a hidden row, and counts never include one.
  const readable = (operation: Operation) => {
    const own = filter(ref.table, operation, q);
    const select = filter(ref.table, 'select', q);
    const same = own && select && firstDifference(own, select) === undefined;
    return and([own, same ? undefined : select, live]);
  };
  const protect = (userWhere: Node | undefined, operation: Operation) =>
    guardedWhere(userWhere, readable(operation), simpleConjuncts(userWhere, q, q, columns));
  const touch = (targetList: Node[]) => {
    if (has(ref.table, 'updated_at') && !targetList.some((t) => as(t, 'ResTarget')?.name === 'updated_at')) {
      targetList.push(resTarget(call(['now']), 'updated_at'));
    }
  };

  let stmt: UpdateStmt | DeleteStmt | InsertStmt;
  if (ref.role === 'update') {
    const update = ref.owner as UpdateStmt;
    Object.assign(update, whereOf(protect(update.whereClause, 'update')));
    update.targetList ??= [];
    touch(update.targetList);
    check('update');
    stmt = update;
  } else if (ref.role === 'delete') {
    const del = ref.owner as DeleteStmt;
    Object.assign(del, whereOf(protect(del.whereClause, 'delete')));
    stmt = del;
    if (live) {
      // Soft delete: DELETE becomes UPDATE … SET deleted_at = now().
      const wrapper = wrap.get(del);
      if (!wrapper) throw new ServiceError('INTERNAL_ERROR', 'DELETE without a node wrapper');
      const update: UpdateStmt = {
        relation: rv,
        targetList: [resTarget(call(['now']), 'deleted_at')],
        ...(del.usingClause ? { fromClause: del.usingClause } : {}),
        ...whereOf(del.whereClause),
        ...(del.returningClause ? { returningClause: del.returningClause } : {}),
        ...(del.withClause ? { withClause: del.withClause } : {}),
      };
      touch(update.targetList as Node[]);
      replaceWrapper(wrapper, { UpdateStmt: update });
      if (hasReturning(del)) {
        const f = filter(ref.table, 'select', q);
        if (f) prependRowCheck(update, call([USER_SCHEMA, ROW_CHECK_FUNCTION], [f, text(`${ref.table}:select`)]));
      }
      return;
    }
  } else {
    const insert = ref.owner as InsertStmt;
    const conflict = insert.onConflictClause;
    if (conflict?.action === 'ONCONFLICT_UPDATE') {
      // A soft-deleted row is never updated back to life by an upsert.
      Object.assign(conflict, whereOf(guardedWhere(conflict.whereClause, readable('update'), [])));
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
    stmt = insert;
  }
  if (hasReturning(stmt)) check('select');
  const all = and(checks);
  if (all) prependRowCheck(stmt, all);
}

const hasReturning = (stmt: { returningClause?: ReturningClause }): boolean => (stmt.returningClause?.exprs?.length ?? 0) > 0;

/** The row check goes first in RETURNING: the user's expressions are evaluated only for rows that passed it. */
function prependRowCheck(stmt: { returningClause?: ReturningClause }, expr: Node) {
  stmt.returningClause ??= { exprs: [] };
  stmt.returningClause.exprs ??= [];
  stmt.returningClause.exprs.unshift(resTarget(expr, ROW_CHECK_COLUMN));
}
