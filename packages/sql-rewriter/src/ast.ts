import type { Node } from '@pgsql/types';
import type { NodeTag } from './walk.js';

/** The payload of `n` when it is a `{ [tag]: payload }` node of that tag, typed by @pgsql/types. */
export const as = <K extends NodeTag>(n: Node | undefined | null, tag: K): Extract<Node, Record<K, unknown>>[K] | undefined =>
  n && tag in n ? (n as unknown as Record<K, Extract<Node, Record<K, unknown>>[K]>)[tag] : undefined;

/**
 * Small constructors for the libpg-query JSON AST, so the rewriter builds nodes instead of splicing text. Typed
 * with @pgsql/types, and shaped exactly as the parser shapes them (no empty lists, false as an empty payload):
 * the round-trip check compares what was built with what the printed text parses back to.
 */
export const str = (sval: string): Node => ({ String: { sval } });
export const col = (qualifier: string | null, name: string): Node => ({
  ColumnRef: { fields: qualifier ? [str(qualifier), str(name)] : [str(name)] },
});
export const call = (name: string[], args: Node[] = []): Node => ({
  FuncCall: { funcname: name.map(str), ...(args.length ? { args } : {}), funcformat: 'COERCE_EXPLICIT_CALL' },
});
export const text = (s: string): Node => ({ A_Const: { sval: { sval: s } } });
export const TRUE: Node = { A_Const: { boolval: { boolval: true } } };
export const FALSE: Node = { A_Const: { boolval: {} } };
export const ZERO: Node = { A_Const: { ival: {} } };
export const eq = (lexpr: Node, rexpr: Node): Node => ({
  A_Expr: { kind: 'AEXPR_OP', name: [str('=')], lexpr, rexpr },
});
export const isNull = (arg: Node): Node => ({ NullTest: { arg, nulltesttype: 'IS_NULL' } });
export const and = (args: (Node | null | undefined)[]): Node | undefined => {
  const parts = args.filter((a): a is Node => a !== undefined && a !== null);
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  return { BoolExpr: { boolop: 'AND_EXPR', args: parts } };
};
export const resTarget = (val: Node, name?: string): Node => ({ ResTarget: { ...(name ? { name } : {}), val } });
export const star = (): Node => ({ ColumnRef: { fields: [{ A_Star: {} }] } });
/** `CASE WHEN <when> THEN <then> ELSE <otherwise> END`. */
export const caseWhen = (when: Node, then: Node, otherwise: Node): Node => ({
  CaseExpr: { args: [{ CaseWhen: { expr: when, result: then } }], defresult: otherwise },
});

/** Each node payload object of a tree, mapped to its `{ Tag: payload }` wrapper. */
export type Wrappers = Map<object, Node>;

/**
 * Maps each inner node object to its `{ Tag: node }` wrapper, so a node can be replaced by another kind.
 * Iterative, and lists are pushed item by item: spreading a 150 000-item IN list into push() overflows the stack.
 */
export function wrappers(tree: unknown): Wrappers {
  const map: Wrappers = new Map();
  const stack: unknown[] = [tree];
  while (stack.length) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      const only = keys.length === 1 ? (v as Record<string, unknown>)[keys[0] as string] : undefined;
      if (only && typeof only === 'object' && /^[A-Z]/.test(keys[0] as string)) map.set(only, v as Node);
      for (const k of keys) stack.push((v as Record<string, unknown>)[k]);
    }
  }
  return map;
}

/** Replaces a node wrapper's content in place: `{ A: x }` becomes `{ B: y }` (every reference sees the new node). */
export function replaceWrapper(wrapper: Node, replacement: Node): void {
  const w = wrapper as Record<string, unknown>;
  for (const k of Object.keys(w)) delete w[k];
  Object.assign(w, replacement);
}
