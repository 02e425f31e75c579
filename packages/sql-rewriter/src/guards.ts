import { FALSE, and, as, caseWhen } from './ast.js';
import type { Node } from '@pgsql/types';

/**
 * Policy filters must run before any user expression sees a row: a cast or a division evaluated on a hidden row
 * would put its values into an error message, or answer yes/no about them. The rewriter therefore fences filtered
 * reads (OFFSET 0 keeps PostgreSQL from merging the user's WHERE into the filtered scan) and evaluates a write's
 * WHERE only inside CASE WHEN <filter>. To keep index lookups fast, the user's *simple* predicates — a column
 * compared with a constant, IN a list of constants, IS [NOT] NULL — are copied next to the filter: they cannot
 * raise an error that depends on a row, so their order does not matter.
 */

const COMPARISONS = new Set(['=', '<>', '<', '<=', '>', '>=']);

const isConstant = (n: Node | undefined): boolean => as(n, 'A_Const') !== undefined || as(as(n, 'TypeCast')?.arg, 'A_Const') !== undefined;

/** The column a predicate side names, if it names one of `table`'s columns through `qualifier` (or unqualified). */
function columnOf(n: Node | undefined, qualifier: string, columns: ReadonlySet<string>): string | undefined {
  const names = as(n, 'ColumnRef')?.fields?.map((f) => as(f, 'String')?.sval);
  if (!names || names.some((x) => x === undefined)) return undefined;
  const col = names.length === 1 ? names[0] : names.length === 2 && names[0] === qualifier ? names[1] : undefined;
  return col !== undefined && columns.has(col) ? col : undefined;
}

/** A copy of the simple predicate `n` whose column is qualified with `inner`. */
function requalify(n: Node, inner: string): Node {
  const copy = structuredClone(n);
  const visit = (x: Node | undefined) => {
    const ref = as(x, 'ColumnRef');
    const last = ref?.fields?.at(-1);
    if (ref && last) ref.fields = [{ String: { sval: inner } }, last];
  };
  const e = as(copy, 'A_Expr');
  visit(e?.lexpr);
  visit(e?.rexpr);
  visit(as(copy, 'NullTest')?.arg);
  return copy;
}

function isSimple(p: Node, qualifier: string, columns: ReadonlySet<string>): boolean {
  const e = as(p, 'A_Expr');
  if (e) {
    const op = e.name?.length === 1 ? as(e.name[0], 'String')?.sval : undefined;
    if (op === undefined) return false;
    if (e.kind === 'AEXPR_OP' && COMPARISONS.has(op)) {
      return (
        (columnOf(e.lexpr, qualifier, columns) !== undefined && isConstant(e.rexpr)) ||
        (columnOf(e.rexpr, qualifier, columns) !== undefined && isConstant(e.lexpr))
      );
    }
    if (e.kind === 'AEXPR_IN' && (op === '=' || op === '<>')) {
      const items = as(e.rexpr, 'List')?.items;
      return columnOf(e.lexpr, qualifier, columns) !== undefined && !!items && items.every(isConstant);
    }
    return false;
  }
  const test = as(p, 'NullTest');
  return test !== undefined && columnOf(test.arg, qualifier, columns) !== undefined;
}

/** Copies of the simple top-level conjuncts of `where` about the table, qualified with `inner`. */
export function simpleConjuncts(where: Node | undefined, qualifier: string, inner: string, columns: ReadonlySet<string>): Node[] {
  if (!where) return [];
  const bool = as(where, 'BoolExpr');
  const parts = bool?.boolop === 'AND_EXPR' ? (bool.args ?? []) : [where];
  return parts.filter((p) => isSimple(p, qualifier, columns)).map((p) => requalify(p, inner));
}

/** `CASE WHEN <guard> THEN <expr> ELSE false END`: `expr` only ever sees rows that passed `guard`. */
export const guarded = (guard: Node, expr: Node): Node => caseWhen(guard, expr, FALSE);

/** The WHERE of a filtered write: copies for the index, the filter, and the user's WHERE behind the filter. */
export function guardedWhere(userWhere: Node | undefined, filter: Node | undefined, copies: Node[]): Node | undefined {
  if (!filter) return userWhere;
  if (!userWhere) return filter;
  return and([...copies, filter, guarded(filter, userWhere)]);
}
