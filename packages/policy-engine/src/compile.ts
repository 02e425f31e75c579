import type { Node } from '@pgsql/types';
import type { CompareOperator, ConditionValue, Filter } from './types.js';

export interface CompileOptions {
  /** Table name or alias the column references are qualified with. */
  qualifier?: string;
  /** The subject's user id, for `$user_id`; null when anonymous. */
  userId: string | null;
}

const SQL_OP: Record<CompareOperator, string> = { $eq: '=', $ne: '<>', $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };
const INT4_MAX = 2147483647;

// The parser's own shapes (false and 0 have empty payloads), so compiled nodes equal what parseSync returns.
const TRUE: Node = { A_Const: { boolval: { boolval: true } } };
const FALSE: Node = { A_Const: { boolval: {} } };
const str = (sval: string): Node => ({ String: { sval } });

function literal(v: string | number | boolean): Node {
  if (typeof v === 'boolean') return v ? TRUE : FALSE;
  if (typeof v === 'string') return { A_Const: { sval: { sval: v } } };
  if (Number.isInteger(v) && Math.abs(v) <= INT4_MAX) return { A_Const: { ival: v === 0 ? {} : { ival: v } } };
  return { A_Const: { fval: { fval: String(v) } } };
}

/** Partially evaluated SQL: a node, or a constant already folded away. */
type Expr = Node | boolean;

function combine(op: 'AND_EXPR' | 'OR_EXPR', parts: Expr[]): Expr {
  const absorbing = op === 'OR_EXPR';
  const args: Node[] = [];
  for (const p of parts) {
    if (typeof p === 'boolean') {
      if (p === absorbing) return absorbing;
      continue;
    }
    // Flattened like the parser does, so `a AND (b AND c)` round-trips as one BoolExpr.
    const inner = (p as { BoolExpr?: { boolop: string; args: Node[] } }).BoolExpr;
    if (inner?.boolop === op) args.push(...inner.args);
    else args.push(p);
  }
  if (args.length === 0) return !absorbing;
  return args.length === 1 ? args[0]! : { BoolExpr: { boolop: op, args } };
}

/**
 * Compiles `filter` to a libpg-query expression node for a WHERE clause (null → TRUE). Values become constants in
 * the AST; the deparser quotes them. Strings are untyped constants, so PostgreSQL coerces them to the column type.
 *
 * NULL semantics. A column that is NULL makes its comparison NULL. Inside the deny part, NOT (NULL) is NULL, and
 * both WHERE and the row check (`IS NOT TRUE`) treat NULL as "not permitted": an unknown never lets a row through,
 * so a deny `{status: "secret"}` also hides rows whose status is NULL.
 *
 * Anonymous `$user_id` (userId null). A comparison with it ($eq, $ne, $gt…, or an `$in` element) is unknown and
 * is folded to the constant that admits fewer rows: FALSE under an allow (it grants nothing), TRUE under a deny's
 * NOT (the deny covers the row). A plain FALSE everywhere would make a deny `{owner_id: {$ne: "$user_id"}}` open
 * every row to anonymous runs.
 */
export function compileFilter(filter: Filter | null, opts: CompileOptions): Node {
  if (filter === null) return TRUE;
  const column = (name: string): Node => ({
    ColumnRef: { fields: opts.qualifier === undefined ? [str(name)] : [str(opts.qualifier), str(name)] },
  });
  const value = (v: ConditionValue): Node | undefined =>
    typeof v !== 'object' ? literal(v) : opts.userId === null ? undefined : literal(opts.userId);

  // `negated`: under an odd number of NOTs, where TRUE is the value that admits fewer rows.
  const walk = (f: Filter, negated: boolean): Expr => {
    switch (f.kind) {
      case 'and':
        return combine('AND_EXPR', f.args.map((a) => walk(a, negated)));
      case 'or':
        return combine('OR_EXPR', f.args.map((a) => walk(a, negated)));
      case 'not': {
        const inner = walk(f.arg, !negated);
        return typeof inner === 'boolean' ? !inner : { BoolExpr: { boolop: 'NOT_EXPR', args: [inner] } };
      }
      case 'null':
        return { NullTest: { arg: column(f.column), nulltesttype: f.isNull ? 'IS_NULL' : 'IS_NOT_NULL' } };
      case 'compare': {
        const rexpr = value(f.value);
        if (rexpr === undefined) return negated;
        return { A_Expr: { kind: 'AEXPR_OP', name: [str(SQL_OP[f.op])], lexpr: column(f.column), rexpr } };
      }
      case 'in': {
        const items = f.values.map(value);
        const known = items.filter((n): n is Node => n !== undefined);
        const list: Expr =
          known.length === 0
            ? false
            : { A_Expr: { kind: 'AEXPR_IN', name: [str('=')], lexpr: column(f.column), rexpr: { List: { items: known } } } };
        return known.length < items.length ? combine('OR_EXPR', [list, negated]) : list;
      }
    }
  };

  const out = walk(filter, false);
  return typeof out === 'boolean' ? (out ? TRUE : FALSE) : out;
}
