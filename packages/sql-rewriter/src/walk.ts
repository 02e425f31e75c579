import type { Node } from '@pgsql/types';
import { runtimeSchema } from '@pgsql/traverse/18/runtime-schema.js';
import { ServiceError } from '@wds/errors';

/**
 * Every tag of libpg-query's `Node` union. Derived from `@pgsql/types`, so an upgrade that adds a node kind adds a
 * tag here, and `RULES: Record<NodeTag, Rule>` (rules.ts) stops compiling until someone decides the new kind.
 */
export type NodeTag = Node extends infer N ? (N extends unknown ? keyof N : never) : never;

/** Where a node sits: its tag, the node object (without its `{ Tag: … }` wrapper) and how its parent holds it. */
export interface Path {
  readonly tag: NodeTag;
  // biome-ignore lint/suspicious/noExplicitAny: the node's shape depends on `tag`; rules narrow it where they read it
  readonly node: any;
  readonly parent: Path | null;
  /** The parent's field holding this node (`''` at the root). */
  readonly field: string;
  /** The index in that field when it is a list. */
  readonly index: number | undefined;
}

interface FieldSpec {
  name: string;
  /** 'Node' (a `{ Tag: … }` wrapper), a concrete node type (stored bare, without wrapper) or a scalar type. */
  type: string;
  isArray: boolean;
}

const SCHEMA: ReadonlyMap<string, readonly FieldSpec[]> = new Map(runtimeSchema.map((s) => [s.name, s.fields]));
const isNodeType = (type: string) => type === 'Node' || SCHEMA.has(type);
/** Node fields of each tag, in the schema's order, computed once per tag. */
const NODE_FIELDS = new Map<string, { fields: FieldSpec[]; nodeNames: Set<string> }>();
function nodeFields(tag: string) {
  let entry = NODE_FIELDS.get(tag);
  if (!entry) {
    const fields = (SCHEMA.get(tag) ?? []).filter((f) => isNodeType(f.type));
    entry = { fields, nodeNames: new Set(fields.map((f) => f.name)) };
    NODE_FIELDS.set(tag, entry);
  }
  return entry;
}

/**
 * Deepest node nesting accepted. Real statements stay far below; deeper ones (`NOT NOT … NOT x`, `1+1+…+1` with
 * thousands of terms) would overflow the recursive steps after analysis (the deparser, structuredClone), so they
 * are refused here, where the walk itself is iterative and cannot overflow.
 */
export const MAX_DEPTH = 500;
export const tooDeep = () => new ServiceError('UNSUPPORTED', 'Unsupported SQL: the statement nests too deeply');

const unknownShape = (what: string) => new ServiceError('UNSUPPORTED', `Unsupported SQL: unknown syntax tree shape (${what})`);

/** `{ Tag: node }` → [Tag, node], or undefined when `v` is not a node wrapper. */
function unwrap(v: unknown): [string, object] | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1) return undefined;
  const tag = keys[0] as string;
  const inner = (v as Record<string, unknown>)[tag];
  return /^[A-Z]/.test(tag) && typeof inner === 'object' && inner !== null && !Array.isArray(inner) ? [tag, inner] : undefined;
}

const isEmptyObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;

interface Pending {
  value: unknown;
  /** The declared type of the field holding `value`: 'Node' or a concrete node type. */
  type: string;
  parent: Path | null;
  field: string;
  index: number | undefined;
  depth: number;
}

/**
 * Visits every node of a parse tree, depth first in source order (the schema's field order, as
 * `@pgsql/traverse` does), with an explicit stack: a statement with 150 000 list items never recurses, and
 * nesting deeper than MAX_DEPTH is refused. Bare typed fields (e.g. `ColumnDef.typeName`) get their tag from the runtime schema, so no node is
 * missed; an object in a field the schema does not know is refused rather than skipped.
 */
export function walk(root: unknown, rootType: NodeTag | 'Node', visit: (path: Path) => void): void {
  const stack: Pending[] = [{ value: root, type: rootType, parent: null, field: '', index: undefined, depth: 0 }];
  while (stack.length > 0) {
    const { value, type, parent, field, index, depth } = stack.pop() as Pending;
    if (depth > MAX_DEPTH) throw tooDeep();
    // libpg-query prints a NULL list element as `{}` (e.g. a function without a column list in ROWS FROM).
    if (type === 'Node' && index !== undefined && isEmptyObject(value)) continue;
    let tag: string;
    let node: object;
    const wrapped = type === 'Node' || !SCHEMA.has(type) ? unwrap(value) : undefined;
    if (wrapped) [tag, node] = wrapped;
    else if (type !== 'Node' && typeof value === 'object' && value !== null && !Array.isArray(value)) [tag, node] = [type, value];
    else throw unknownShape(`${parent?.tag ?? 'root'}.${field}`);

    const path: Path = { tag: tag as NodeTag, node, parent, field, index };
    visit(path);

    const { fields, nodeNames } = nodeFields(tag);
    // An object or list anywhere but in a node field would escape every rule.
    for (const key in node) {
      const v = (node as Record<string, unknown>)[key];
      if (typeof v === 'object' && v !== null && !nodeNames.has(key)) throw unknownShape(`${tag}.${key}`);
    }
    // Pushed in reverse so that they pop in schema order.
    for (let f = fields.length - 1; f >= 0; f--) {
      const spec = fields[f] as FieldSpec;
      const v = (node as Record<string, unknown>)[spec.name];
      if (v === undefined || v === null) continue;
      if (Array.isArray(v)) {
        if (!spec.isArray) throw unknownShape(`${tag}.${spec.name}`);
        for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], type: spec.type, parent: path, field: spec.name, index: i, depth: depth + 1 });
      } else {
        if (spec.isArray) throw unknownShape(`${tag}.${spec.name}`);
        stack.push({ value: v, type: spec.type, parent: path, field: spec.name, index: undefined, depth: depth + 1 });
      }
    }
  }
}
