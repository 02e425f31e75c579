import { FALSE, and, caseWhen } from './ast.js';
import type { AnyNode } from './parse.js';

/**
 * Policy filters must run before any user expression sees a row: a cast or a division evaluated on a hidden row
 * would put its values into an error message, or answer yes/no about them. The rewriter therefore fences filtered
 * reads (OFFSET 0 keeps PostgreSQL from merging the user's WHERE into the filtered scan) and evaluates a write's
 * WHERE only inside CASE WHEN <filter>. To keep index lookups fast, the user's *simple* predicates — a column
 * compared with a constant, IN a list of constants, IS [NOT] NULL — are copied next to the filter: they cannot
 * raise an error that depends on a row, so their order does not matter.
 */

const COMPARISONS = new Set(['=', '<>', '<', '<=', '>', '>=']);

const isConstant = (n: AnyNode): boolean =>
  n?.A_Const !== undefined || (n?.TypeCast !== undefined && n.TypeCast.arg?.A_Const !== undefined);

/** The column a predicate side names, if it names one of `table`'s columns through `qualifier` (or unqualified). */
function columnOf(n: AnyNode, qualifier: string, columns: ReadonlySet<string>): string | undefined {
  const fields: AnyNode[] | undefined = n?.ColumnRef?.fields;
  if (!fields || fields.some((f) => f.String === undefined)) return undefined;
  const names = fields.map((f) => f.String.sval as string);
  const col = names.length === 1 ? names[0] : names.length === 2 && names[0] === qualifier ? names[1] : undefined;
  return col !== undefined && columns.has(col) ? col : undefined;
}

function requalify(n: AnyNode, inner: string): AnyNode {
  const copy = structuredClone(n);
  const visit = (x: AnyNode) => {
    if (x?.ColumnRef) {
      const fields = x.ColumnRef.fields;
      x.ColumnRef.fields = [{ String: { sval: inner } }, fields[fields.length - 1]];
    }
  };
  visit(copy.A_Expr?.lexpr);
  visit(copy.A_Expr?.rexpr);
  visit(copy.NullTest?.arg);
  return copy;
}

function isSimple(p: AnyNode, qualifier: string, columns: ReadonlySet<string>): boolean {
  const e = p.A_Expr;
  if (e) {
    const op = e.name?.length === 1 ? e.name[0].String?.sval : undefined;
    if (e.kind === 'AEXPR_OP' && COMPARISONS.has(op)) {
      return (
        (columnOf(e.lexpr, qualifier, columns) !== undefined && isConstant(e.rexpr)) ||
        (columnOf(e.rexpr, qualifier, columns) !== undefined && isConstant(e.lexpr))
      );
    }
    if (e.kind === 'AEXPR_IN' && (op === '=' || op === '<>')) {
      const items: AnyNode[] | undefined = e.rexpr?.List?.items;
      return columnOf(e.lexpr, qualifier, columns) !== undefined && !!items && items.every(isConstant);
    }
    return false;
  }
  return p.NullTest !== undefined && columnOf(p.NullTest.arg, qualifier, columns) !== undefined;
}

/** Copies of the simple top-level conjuncts of `where` about the table, qualified with `inner`. */
export function simpleConjuncts(where: AnyNode, qualifier: string, inner: string, columns: ReadonlySet<string>): AnyNode[] {
  if (!where) return [];
  const parts: AnyNode[] = where.BoolExpr?.boolop === 'AND_EXPR' ? where.BoolExpr.args : [where];
  return parts.filter((p) => isSimple(p, qualifier, columns)).map((p) => requalify(p, inner));
}

/** `CASE WHEN <guard> THEN <expr> ELSE false END`: `expr` only ever sees rows that passed `guard`. */
export const guarded = (guard: AnyNode, expr: AnyNode): AnyNode => caseWhen(guard, expr, FALSE);

/** The WHERE of a filtered write: copies for the index, the filter, and the user's WHERE behind the filter. */
export function guardedWhere(userWhere: AnyNode, filter: AnyNode | undefined, copies: AnyNode[]): AnyNode | undefined {
  if (!filter) return userWhere;
  if (!userWhere) return filter;
  return and([...copies, filter, guarded(filter, userWhere)]);
}
