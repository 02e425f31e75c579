import { ServiceError } from '@wds/errors';
import { type AnyNode, MAX_DERIVED_SQL_BYTES, parseSqlTree } from './parse.js';

/**
 * The first wall's last check: the text that will reach PostgreSQL is parsed again and must be exactly one
 * statement whose tree equals the rewritten tree. The deparser is not ours; if it ever prints a name or a value
 * in a way that reads back differently (an unquoted alias that opens a comment, an option string that closes its
 * quote), the executed statement would differ from the analysed one. Then nothing runs.
 */

/** Fields that say where a node was in the text, not what it is. */
export const POSITION_FIELDS: ReadonlySet<string> = new Set([
  'location',
  'stmt_location',
  'stmt_len',
  'name_location',
  'list_start',
  'list_end',
  'rexpr_list_start',
  'rexpr_list_end',
]);

export interface Mismatch {
  /** Key path of the first difference, e.g. `stmts.0.stmt.SelectStmt.fromClause.0`. */
  path: string;
}

/** Compares two parse trees, ignoring positions; iterative, so a 150k-item IN list cannot overflow the stack. */
export function firstDifference(a: AnyNode, b: AnyNode): Mismatch | undefined {
  // The fast walk answers the common case (equal) without building paths; only a difference is walked again.
  return sameTree(a, b) ? undefined : { path: pathOfDifference(a, b) };
}

function sameTree(a: AnyNode, b: AnyNode): boolean {
  const xs: AnyNode[] = [a];
  const ys: AnyNode[] = [b];
  while (xs.length > 0) {
    const x = xs.pop();
    const y = ys.pop();
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) {
        xs.push(x[i]);
        ys.push(y[i]);
      }
      continue;
    }
    if (Array.isArray(y)) return false;
    let n = 0;
    for (const k in x) {
      if (!meaningful(k, x[k])) continue;
      n++;
      if (!meaningful(k, y[k])) return false;
      if (k === 'args' && isBoolExpr(x) && isBoolExpr(y)) {
        xs.push(flatArgs(x));
        ys.push(flatArgs(y));
      } else {
        xs.push(x[k]);
        ys.push(y[k]);
      }
    }
    for (const k in y) if (meaningful(k, y[k])) n--;
    if (n !== 0) return false;
  }
  return true;
}

/** The key path of the first difference (slow: builds a path string per node; runs only after sameTree failed). */
function pathOfDifference(a: AnyNode, b: AnyNode): string {
  const stack: [AnyNode, AnyNode, string][] = [[a, b, '']];
  while (stack.length > 0) {
    const [x, y, path] = stack.pop() as [AnyNode, AnyNode, string];
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return path;
    if (Array.isArray(x) !== Array.isArray(y)) return path;
    if (Array.isArray(x)) {
      if (x.length !== y.length) return path;
      for (let i = 0; i < x.length; i++) stack.push([x[i], y[i], `${path}.${i}`]);
      continue;
    }
    const kx = Object.keys(x).filter((k) => meaningful(k, x[k]));
    const ky = Object.keys(y).filter((k) => meaningful(k, y[k]));
    if (kx.length !== ky.length) return `${path}{${diffKeys(kx, ky)}}`;
    for (const k of kx) {
      if (!meaningful(k, y[k])) return `${path}.${k}`;
      if (k === 'args' && isBoolExpr(x) && isBoolExpr(y)) stack.push([flatArgs(x), flatArgs(y), `${path}.args`]);
      else stack.push([x[k], y[k], `${path}.${k}`]);
    }
  }
  return '(no difference)';
}

/** An empty list prints like an absent one (`now()` has `args: []` when built, none when parsed). */
const meaningful = (key: string, value: unknown): boolean =>
  !POSITION_FIELDS.has(key) && value !== undefined && !(Array.isArray(value) && value.length === 0);

const isBoolExpr = (n: AnyNode): boolean =>
  (n.boolop === 'AND_EXPR' || n.boolop === 'OR_EXPR') && Array.isArray(n.args);

/**
 * The arguments of an AND (OR) with nested ANDs (ORs) spliced in. PostgreSQL's grammar flattens `(a AND b) AND c`
 * as it parses, so a tree built as and(and(a, b), c) reads back flat; both mean the same.
 */
function flatArgs(n: AnyNode): AnyNode[] {
  const out: AnyNode[] = [];
  const todo: AnyNode[] = [...n.args].reverse();
  while (todo.length > 0) {
    const arg = todo.pop();
    const inner = arg?.BoolExpr;
    if (inner && inner.boolop === n.boolop && Array.isArray(inner.args)) {
      for (let i = inner.args.length - 1; i >= 0; i--) todo.push(inner.args[i]);
    } else out.push(arg);
  }
  return out;
}

const diffKeys = (a: string[], b: string[]): string => {
  const sa = new Set(a);
  const sb = new Set(b);
  return [...a.filter((k) => !sb.has(k)), ...b.filter((k) => !sa.has(k))].join(',');
};

/** Called when the check refuses a statement, so that the operator learns about a deparser gap. */
export type MismatchReporter = (info: { path: string; executed: string }) => void;
let reporter: MismatchReporter | undefined;
export const onRoundTripMismatch = (fn: MismatchReporter | undefined): void => {
  reporter = fn;
};

const refused = () =>
  new ServiceError(
    'UNSUPPORTED',
    'Unsupported SQL: the statement cannot be rewritten safely',
    'a name or value in it does not survive printing unchanged; rename it or write it differently',
  );

/** Throws unless `sql` parses to exactly one statement equal to `stmt` (a `{ Tag: node }` statement node). */
export function assertRoundTrip(stmt: AnyNode, sql: string): void {
  let tree: AnyNode;
  try {
    // The service's own parser instance (bounded and recovered like every parse), with room for the policies.
    tree = parseSqlTree(sql, { maxBytes: MAX_DERIVED_SQL_BYTES });
  } catch {
    reporter?.({ path: '(does not parse)', executed: sql });
    throw refused();
  }
  const stmts = tree?.stmts ?? [];
  const diff = stmts.length === 1 ? firstDifference(stmt, stmts[0].stmt) : { path: `(${stmts.length} statements)` };
  if (diff) {
    reporter?.({ path: diff.path, executed: sql });
    throw refused();
  }
}
