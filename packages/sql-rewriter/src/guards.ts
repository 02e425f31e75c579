import { FALSE, and, as, caseWhen } from './ast.js';
import type { Node } from '@pgsql/types';
import type { Columns } from './rewrite.js';

/**
 * Policy filters must run before any user expression sees a row: a cast or a division evaluated on a hidden row
 * would put its values into an error message, or answer yes/no about them. The rewriter therefore fences filtered
 * reads (OFFSET 0 keeps PostgreSQL from merging the user's WHERE into the filtered scan) and evaluates a write's
 * WHERE only inside CASE WHEN <filter>. To keep index lookups fast, the user's *simple* predicates are copied next
 * to the filter, where PostgreSQL orders them by cost and may well run them first, on rows the filter hides. So a
 * copy must be unable to fail on any row, whatever it holds, or it becomes an oracle (issue 28, finding 3: `numeric
 * = float8` casts the column on every row and `1e400` does not fit; a cheap second copy decides whether the failing
 * one is reached). Copied are only predicates that compare a column of a type whose comparisons cannot fail
 * (COPYABLE_TYPES) with a constant PostgreSQL converts to that type once, at planning — an untyped literal or a
 * literal cast to exactly the column's type — so the operator applies to the column's own type and never casts the
 * column; and IS [NOT] NULL on any column.
 */

const COMPARISONS = new Set(['=', '<>', '<', '<=', '>', '>=']);

/**
 * Built-in types (by their pg_type names) whose comparison operators with an operand of the same type never raise
 * an error, and against which an untyped number is either converted once (at planning) or makes PostgreSQL widen the
 * column losslessly (int2 → int4/int8/numeric, float4 → float8). Not here: types without comparisons (json, xml,
 * geometric types; an operator found for them would need a cast of the column), arrays (array_eq fails on element
 * types without equality, depending on the row's dimensions), and anything not built in.
 */
const COPYABLE_TYPES: ReadonlySet<string> = new Set([
  'bool', 'int2', 'int4', 'int8', 'numeric', 'float4', 'float8', 'money',
  'text', 'varchar', 'bpchar', 'char', 'name', 'uuid', 'jsonb',
  'date', 'time', 'timetz', 'timestamp', 'timestamptz', 'interval',
  'bytea', 'bit', 'varbit', 'inet', 'cidr', 'macaddr', 'macaddr8', 'tsvector', 'tsquery',
  'int4range', 'int8range', 'numrange', 'tsrange', 'tstzrange', 'daterange',
  'int4multirange', 'int8multirange', 'nummultirange', 'tsmultirange', 'tstzmultirange', 'datemultirange',
]);

/** The pg_type name a cast names (`pg_catalog.int4` for `integer`, `timestamptz`, …); undefined for arrays. */
function castType(n: Node): string | undefined {
  const t = as(n, 'TypeCast')?.typeName;
  if (!t || t.arrayBounds?.length || t.pct_type || t.setof) return undefined;
  const parts = (t.names ?? []).map((x) => as(x, 'String')?.sval);
  if (parts.length === 2 && parts[0] === 'pg_catalog') return parts[1];
  return parts.length === 1 ? parts[0] : undefined;
}

/**
 * Whether `n` is a constant PostgreSQL turns into a value of type `type` once, before any row is read: a literal
 * (its type decided by the column, or a number, see COPYABLE_TYPES), or a literal cast to exactly `type`.
 */
function isConstantOf(n: Node | undefined, type: string): boolean {
  if (as(n, 'A_Const') !== undefined) return true;
  return n !== undefined && as(as(n, 'TypeCast')?.arg, 'A_Const') !== undefined && castType(n) === type;
}

/** The column a predicate side names, if it names one of `table`'s columns through `qualifier` (or unqualified). */
function columnOf(n: Node | undefined, qualifier: string, columns: Columns): string | undefined {
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

function isSimple(p: Node, qualifier: string, columns: Columns): boolean {
  /** The type of the column `n` names, if comparisons of it may be copied. */
  const copyable = (n: Node | undefined): string | undefined => {
    const c = columnOf(n, qualifier, columns);
    const type = c === undefined ? undefined : columns.get(c);
    return type !== undefined && COPYABLE_TYPES.has(type) ? type : undefined;
  };
  const e = as(p, 'A_Expr');
  if (e) {
    const op = e.name?.length === 1 ? as(e.name[0], 'String')?.sval : undefined;
    if (op === undefined) return false;
    if (e.kind === 'AEXPR_OP' && COMPARISONS.has(op)) {
      const left = copyable(e.lexpr);
      const right = copyable(e.rexpr);
      return (left !== undefined && isConstantOf(e.rexpr, left)) || (right !== undefined && isConstantOf(e.lexpr, right));
    }
    if (e.kind === 'AEXPR_IN' && (op === '=' || op === '<>')) {
      // The list and the column are brought to one common type: with these constants, the column's own.
      const type = copyable(e.lexpr);
      const items = as(e.rexpr, 'List')?.items;
      return type !== undefined && !!items && items.every((i) => isConstantOf(i, type));
    }
    return false;
  }
  const test = as(p, 'NullTest');
  return test !== undefined && columnOf(test.arg, qualifier, columns) !== undefined;
}

/** Copies of the simple top-level conjuncts of `where` about the table, qualified with `inner`. */
export function simpleConjuncts(where: Node | undefined, qualifier: string, inner: string, columns: Columns): Node[] {
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
