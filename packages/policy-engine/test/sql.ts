import type { Node } from '@pgsql/types';
import { parseSync } from 'libpg-query';
import { deparseSync } from 'pgsql-deparser';

const PREFIX = 'SELECT * FROM t WHERE ';

/** Deparses an expression node as PostgreSQL would print it in a WHERE clause. */
export function whereSql(node: Node): string {
  const tree: any = parseSync(`${PREFIX}true`);
  tree.stmts[0].stmt.SelectStmt.whereClause = structuredClone(node);
  const sql = deparseSync(tree, { pretty: false });
  if (!sql.startsWith(PREFIX)) throw new Error(`unexpected deparse: ${sql}`);
  return sql.slice(PREFIX.length);
}

const stripPositions = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(stripPositions);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => k !== 'location' && k !== 'rexpr_list_start' && k !== 'rexpr_list_end')
      .map(([k, x]) => [k, stripPositions(x)]),
  );
};

/** The WHERE clause PostgreSQL's parser makes of `sql`, without source positions. */
export const parseWhere = (sql: string): unknown => {
  const tree: any = parseSync(`${PREFIX}${sql}`);
  if (tree.stmts.length !== 1) throw new Error(`expected one statement: ${sql}`);
  return stripPositions(tree.stmts[0].stmt.SelectStmt.whereClause);
};

type Row = Record<string, string | number | boolean | null>;
type Tri = boolean | null;

/**
 * SQL three-valued evaluation of the node kinds compileFilter emits, against one row. Untyped string constants are
 * compared as strings, which is what the coercion to a text or uuid column amounts to for these tests.
 */
export function evaluate(node: any, row: Row): Tri | string | number {
  if (node.A_Const) {
    const c = node.A_Const;
    if (c.boolval) return c.boolval.boolval === true;
    if (c.ival) return c.ival.ival ?? 0;
    if (c.fval) return Number(c.fval.fval);
    if (c.sval) return c.sval.sval ?? '';
    return null;
  }
  if (node.ColumnRef) {
    const name = node.ColumnRef.fields.at(-1).String.sval;
    if (!(name in row)) throw new Error(`no column ${name}`);
    return row[name] as Tri | string | number;
  }
  if (node.NullTest) {
    const v = evaluate(node.NullTest.arg, row);
    return node.NullTest.nulltesttype === 'IS_NULL' ? v === null : v !== null;
  }
  if (node.BoolExpr) {
    const args = node.BoolExpr.args.map((a: unknown) => evaluate(a, row)) as Tri[];
    if (node.BoolExpr.boolop === 'NOT_EXPR') return args[0] === null ? null : !args[0];
    const absorbing = node.BoolExpr.boolop === 'OR_EXPR';
    if (args.includes(absorbing)) return absorbing;
    return args.includes(null) ? null : !absorbing;
  }
  if (node.A_Expr) {
    const { kind, name, lexpr, rexpr } = node.A_Expr;
    const l = evaluate(lexpr, row);
    if (kind === 'AEXPR_IN') {
      const items = rexpr.List.items.map((i: unknown) => evaluate(i, row));
      if (l === null) return null;
      if (items.some((i: unknown) => i === l)) return true;
      return items.includes(null) ? null : false;
    }
    const r = evaluate(rexpr, row);
    if (l === null || r === null) return null;
    switch (name[0].String.sval) {
      case '=':
        return l === r;
      case '<>':
        return l !== r;
      case '<':
        return l < r;
      case '<=':
        return l <= r;
      case '>':
        return l > r;
      case '>=':
        return l >= r;
    }
  }
  throw new Error(`cannot evaluate ${JSON.stringify(node)}`);
}

/** Whether a WHERE clause lets the row through: only TRUE does. */
export const passes = (node: Node, row: Row): boolean => evaluate(node, row) === true;
