import type { A_Indices, FuncCall, Node, ResTarget, SelectStmt, SubLink, WithClause } from '@pgsql/types';
import { call, str, wrappers } from './ast.js';
import { USER_SCHEMA } from './names.js';

/**
 * Bounds on what one statement can allocate in its PostgreSQL backend (docs/sql-and-policies.md, "What a statement
 * may allocate"). Every allowed call or construct that can build far more than its input is sent through a
 * service function of migration 0020, which checks at run time: a template's constants are parameters, so a check
 * on a constant's value could never be static (templates.ts), and a value computed from rows could not be anyway.
 *
 * - `replace`, `regexp_replace` → `user_data.replace`, `user_data.regexp_replace` (same names, so result columns
 *   keep theirs): an upper bound of the result is checked before it is built.
 * - `format(fmt, a…)` → `format(user_data.wds_format_spec(fmt, <number of a>), a…)`: no `*` widths, widths add up
 *   to at most 16 MiB, at most 16 conversions more than four per argument.
 * - the aggregates that keep every input, and `ARRAY(subquery)`: their values pass `user_data.wds_collect`, their
 *   constant arguments (`wds_collect` of an untyped constant could not be typed) are charged along with another
 *   argument, or in the aggregate's FILTER (the subquery's WHERE); 64 MiB per statement.
 * - the recursive term of `WITH RECURSIVE`: each row it reads of the CTE must pass `user_data.wds_cap(r.*)`
 *   (1 MiB), so a row cannot double from one iteration to the next without end (whatever the output list is:
 *   `*`, `x.*` of a LATERAL subquery, …).
 * - subscripts of assignment targets (`UPDATE … SET j['100000000'] = …` pads a jsonb array with nulls) pass
 *   `user_data.wds_subscript` (at most 1 000 000 from 0).
 * Applied to the rewritten tree, so copies the rewriter made of user expressions are bounded too. Sorts, hashes and
 * temporary files are bounded by the workspace role's settings (workspace-sql/src/roles.ts).
 */

/** Built-ins with a bounded twin of the same name in user_data. */
const TWINS: ReadonlySet<string> = new Set(['replace', 'regexp_replace']);

/** Aggregates whose state keeps (a copy of) every input. */
const COLLECTING: ReadonlySet<string> = new Set(['array_agg', 'string_agg', 'json_agg', 'jsonb_agg', 'json_object_agg', 'jsonb_object_agg']);

const service = (name: string, args: Node[]): Node => call([USER_SCHEMA, name], args);

/** The built-in a call names (unqualified or `pg_catalog.`), else undefined (ours, in user_data, or malformed). */
function builtinName(f: FuncCall): string | undefined {
  const parts = (f.funcname ?? []).map((n) => (n as { String?: { sval?: string } }).String?.sval);
  if (parts.length === 1 || (parts.length === 2 && parts[0] === 'pg_catalog')) return parts.at(-1);
  return undefined;
}

const isConstant = (n: Node | undefined): boolean => n !== undefined && 'A_Const' in n;
/** `*`, `t.*`, `(x).*`: an output column that cannot be wrapped in a call. */
const isStar = (n: Node | undefined): boolean =>
  n !== undefined &&
  (('ColumnRef' in n && (n.ColumnRef.fields ?? []).some((f) => 'A_Star' in f)) ||
    ('A_Indirection' in n && (n.A_Indirection.indirection ?? []).some((f) => 'A_Star' in f)));

/** `user_data.wds_charge(<size of c>)`: a constant charged once per row. */
const chargeOf = (c: Node): Node => service('wds_charge', [sizeOf(c)]);

/** What a constant argument costs per row: its length (a string) or a fixed 8 bytes (a number or NULL). */
function sizeOf(c: Node): Node {
  const sval = (c as { A_Const?: { sval?: unknown } }).A_Const?.sval !== undefined;
  return sval ? call(['pg_catalog', 'octet_length'], [structuredClone(c)]) : { A_Const: { ival: { ival: 8 } } };
}

function boundAggregate(f: FuncCall): void {
  const args = f.args ?? [];
  const constants = args.filter(isConstant);
  const carrier = args.findIndex((arg) => !isConstant(arg));
  // One call a row: the constants (a delimiter, a key) are charged along with the first other argument. Not with
  // DISTINCT, whose ORDER BY must repeat the arguments exactly.
  if (carrier >= 0 && constants.length > 0 && !f.agg_distinct) {
    const sizes = constants.map(sizeOf);
    const total = sizes.slice(1).reduce<Node>((sum, size) => ({ A_Expr: { kind: 'AEXPR_OP', name: [str('+')], lexpr: sum, rexpr: size } }), sizes[0] as Node);
    f.args = args.map((arg, i) => (i === carrier ? service('wds_collect', [arg, total]) : arg));
    return;
  }
  const charges: Node[] = [];
  f.args = args.map((arg) => {
    if (!isConstant(arg)) return service('wds_collect', [arg]);
    charges.push(chargeOf(arg));
    return arg;
  });
  // With DISTINCT, ORDER BY must name arguments: the same expressions, so wrapped alike.
  if (f.agg_distinct) {
    for (const s of f.agg_order ?? []) {
      const sort = (s as { SortBy?: { node?: Node } }).SortBy;
      if (!sort?.node || isConstant(sort.node)) continue;
      sort.node = service('wds_collect', [sort.node]);
    }
  }
  f.agg_filter = withCharges(f.agg_filter, charges);
}

/** `condition AND charge…`, shaped as the parser shapes it (it flattens `a AND b AND c`, so the charges are appended). */
function withCharges(condition: Node | undefined, charges: Node[]): Node | undefined {
  if (charges.length === 0) return condition;
  if (condition && 'BoolExpr' in condition && condition.BoolExpr.boolop === 'AND_EXPR') {
    condition.BoolExpr.args = [...(condition.BoolExpr.args ?? []), ...charges];
    return condition;
  }
  const parts = condition ? [condition, ...charges] : charges;
  return parts.length === 1 ? parts[0] : { BoolExpr: { boolop: 'AND_EXPR', args: parts } };
}

/** The leaves (plain SELECT or VALUES) of a set operation, left to right. */
function leaves(s: SelectStmt): SelectStmt[] {
  if (s.op === undefined || s.op === 'SETOP_NONE') return [s];
  return [...(s.larg ? leaves(s.larg) : []), ...(s.rarg ? leaves(s.rarg) : [])];
}

/**
 * Passes the value of each output column of a plain SELECT through `wds_collect`; `*` cannot be wrapped, and
 * constants are not (untyped, they would not resolve): they are charged in the WHERE clause, once per row.
 */
function collectTargets(s: SelectStmt): void {
  const charges: Node[] = [];
  for (const t of s.targetList ?? []) {
    const target = (t as { ResTarget?: { val?: Node } }).ResTarget;
    if (!target?.val || isStar(target.val)) continue;
    if (!isConstant(target.val)) target.val = service('wds_collect', [target.val]);
    else charges.push(chargeOf(target.val));
  }
  const where = withCharges(s.whereClause, charges);
  if (where) s.whereClause = where;
  for (const row of s.valuesLists ?? []) {
    const items = (row as { List?: { items?: Node[] } }).List?.items;
    if (items) items.forEach((item, i) => {
      if (!isConstant(item)) items[i] = service('wds_collect', [item]);
    });
  }
}

/**
 * `ARRAY(SELECT * …)`: its column has no expression to wrap, so the subquery becomes
 * `SELECT wds_a.* FROM (<subquery>) AS wds_a WHERE user_data.wds_collect_row(wds_a.*)` (the same columns, so more
 * than one is still an error; a subquery in FROM keeps its order, and its own names cannot see the alias).
 */
function collectedSubquery(sub: SelectStmt): Node {
  const row = (): Node => ({ ColumnRef: { fields: [str('wds_a'), { A_Star: {} }] } });
  return {
    SelectStmt: {
      targetList: [{ ResTarget: { val: row() } }],
      fromClause: [{ RangeSubselect: { subquery: { SelectStmt: sub }, alias: { aliasname: 'wds_a' } } }],
      whereClause: service('wds_collect_row', [row()]),
      limitOption: 'LIMIT_OPTION_DEFAULT',
      op: 'SETOP_NONE',
    },
  };
}

/** Each CTE a plain SELECT reads (a bare name of `names` in its FROM list, joins included), as its alias or name. */
function cteReads(s: SelectStmt, names: ReadonlySet<string>): string[] {
  // Names inside an aliased join are hidden behind its alias: then the joined row is checked, a CTE row with it.
  const visit = (n: Node | undefined): string[] => {
    if (n && 'JoinExpr' in n) {
      const inner = [...visit(n.JoinExpr.larg), ...visit(n.JoinExpr.rarg)];
      return n.JoinExpr.alias?.aliasname && inner.length ? [n.JoinExpr.alias.aliasname] : inner;
    }
    const r = n && 'RangeVar' in n ? n.RangeVar : undefined;
    return r && !r.schemaname && !r.catalogname && r.relname && names.has(r.relname) ? [r.alias?.aliasname ?? r.relname] : [];
  };
  return (s.fromClause ?? []).flatMap(visit);
}

/** Sends the calls and constructs above through their bounded forms, in place. */
export function boundAllocations(tree: unknown): void {
  const funcs: FuncCall[] = [];
  const arrays: SubLink[] = [];
  const assigned: ResTarget[] = [];
  for (const w of wrappers(tree).values()) {
    if ('FuncCall' in w) funcs.push(w.FuncCall);
    else if ('SubLink' in w && w.SubLink.subLinkType === 'ARRAY_SUBLINK') arrays.push(w.SubLink);
    // Only assignment targets (UPDATE SET, INSERT column lists, ON CONFLICT DO UPDATE SET) carry an indirection.
    else if ('ResTarget' in w && w.ResTarget.indirection?.length) assigned.push(w.ResTarget);
  }
  for (const t of assigned) {
    for (const item of t.indirection ?? []) {
      const indices = (item as { A_Indices?: A_Indices }).A_Indices;
      if (indices?.uidx) indices.uidx = service('wds_subscript', [indices.uidx]);
      if (indices?.lidx) indices.lidx = service('wds_subscript', [indices.lidx]);
    }
  }
  for (const f of funcs) {
    const name = builtinName(f);
    if (name === undefined) continue;
    if (TWINS.has(name)) f.funcname = [str(USER_SCHEMA), str(name)];
    else if (name === 'format' && f.args?.length) {
      // How many arguments follow the format string; unknown (NULL) when they come as a VARIADIC array.
      const count: Node = f.func_variadic ? { A_Const: { isnull: true } } : { A_Const: { ival: f.args.length > 1 ? { ival: f.args.length - 1 } : {} } };
      f.args[0] = service('wds_format_spec', [f.args[0] as Node, count]);
    }
    else if (COLLECTING.has(name)) boundAggregate(f);
  }
  for (const s of arrays) {
    const sub = s.subselect && 'SelectStmt' in s.subselect ? s.subselect.SelectStmt : undefined;
    if (!sub) continue;
    const starred = leaves(sub).some((leaf) => (leaf.targetList ?? []).some((t) => isStar((t as { ResTarget?: { val?: Node } }).ResTarget?.val)));
    if (starred) s.subselect = collectedSubquery(sub);
    else for (const leaf of leaves(sub)) collectTargets(leaf);
  }
  for (const w of recursiveWiths(tree)) {
    const ctes = (w.ctes ?? []).map((c) => (c as { CommonTableExpr?: { ctename?: string; ctequery?: Node } }).CommonTableExpr);
    const names = new Set(ctes.map((c) => c?.ctename).filter((n): n is string => n !== undefined));
    for (const c of ctes) {
      const s = c?.ctequery && 'SelectStmt' in c.ctequery ? c.ctequery.SelectStmt : undefined;
      // The first leaf is the non-recursive term, which runs once; the others read the rows of the last iteration.
      for (const leaf of s ? leaves(s).slice(1) : []) {
        const checks = cteReads(leaf, names).map((name) => service('wds_cap', [{ ColumnRef: { fields: [str(name), { A_Star: {} }] } }]));
        const where = withCharges(leaf.whereClause, checks);
        if (where) leaf.whereClause = where;
      }
    }
  }
}

/** Every `WITH RECURSIVE` clause of a tree (a WithClause is no wrapped node, and set operations' leaves are bare). */
function recursiveWiths(tree: unknown): WithClause[] {
  const out: WithClause[] = [];
  const stack: unknown[] = [tree];
  while (stack.length) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v && typeof v === 'object') {
      const withClause = (v as { withClause?: WithClause }).withClause;
      if (withClause?.recursive) out.push(withClause);
      for (const k of Object.keys(v)) stack.push((v as Record<string, unknown>)[k]);
    }
  }
  return out;
}
