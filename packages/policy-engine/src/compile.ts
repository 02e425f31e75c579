import type { Condition, Filter, Predicate, Value } from './types.js';

// biome-ignore lint/suspicious/noExplicitAny: libpg-query AST nodes are plain JSON keyed by node tag
type Node = any;

const str = (sval: string): Node => ({ String: { sval } });
const TRUE: Node = { A_Const: { boolval: { boolval: true } } };
const FALSE: Node = { A_Const: { boolval: {} } };
const NULL: Node = { A_Const: { isnull: true } };
const bool = (op: 'AND_EXPR' | 'OR_EXPR' | 'NOT_EXPR', args: Node[]): Node =>
  args.length === 1 && op !== 'NOT_EXPR' ? args[0] : { BoolExpr: { boolop: op, args } };

export interface CompileOptions {
  /** Table alias the columns are qualified with. */
  qualifier?: string;
  /** The subject's user id for `$user_id`; null when anonymous. */
  userId: string | null;
}

function constant(v: Value, userId: string | null): Node {
  if (typeof v === 'object') return userId === null ? NULL : { A_Const: { sval: { sval: userId } } };
  if (typeof v === 'boolean') return v ? TRUE : FALSE;
  if (typeof v === 'number') {
    return Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? { A_Const: { ival: v === 0 ? {} : { ival: v } } } : { A_Const: { fval: { fval: String(v) } } };
  }
  // Untyped string constants: PostgreSQL coerces them to the column's type (uuid, text, date…).
  return { A_Const: { sval: { sval: v } } };
}

const SQL_OP = { $eq: '=', $ne: '<>', $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' } as const;

function predicate(column: Node, p: Predicate, userId: string | null): Node {
  if (p.op === '$null') return { NullTest: { arg: column, nulltesttype: p.value ? 'IS_NULL' : 'IS_NOT_NULL' } };
  if (p.op === '$in') {
    const values = p.values.map((v) => constant(v, userId));
    if (values.length === 0) return FALSE;
    return { A_Expr: { kind: 'AEXPR_IN', name: [str('=')], lexpr: column, rexpr: { List: { items: values } } } };
  }
  // `col = NULL` and `col <> NULL` are NULL, so an anonymous `$user_id` never matches either way.
  return { A_Expr: { kind: 'AEXPR_OP', name: [str(SQL_OP[p.op])], lexpr: column, rexpr: constant(p.value, userId) } };
}

function condition(c: Condition, o: CompileOptions): Node {
  const parts = Object.entries(c).flatMap(([field, preds]) => {
    const column = { ColumnRef: { fields: o.qualifier ? [str(o.qualifier), str(field)] : [str(field)] } };
    return preds.map((p) => predicate(column, p, o.userId));
  });
  return parts.length ? bool('AND_EXPR', parts) : TRUE;
}

/**
 * The filter as a libpg-query expression node. A deny condition that is NULL for a row makes NOT (…) NULL, and
 * a NULL WHERE excludes the row: unknown never lets a row through.
 */
export function compileFilter(filter: Filter | null, o: CompileOptions): Node {
  if (!filter) return TRUE;
  const parts: Node[] = [];
  if (filter.anyOf) parts.push(bool('OR_EXPR', filter.anyOf.map((c) => condition(c, o))));
  if (filter.noneOf.length) parts.push(bool('NOT_EXPR', [bool('OR_EXPR', filter.noneOf.map((c) => condition(c, o)))]));
  return parts.length ? bool('AND_EXPR', parts) : TRUE;
}
