import { ServiceError } from '@wds/errors';
import { deparseSync } from 'pgsql-deparser';
import { type Analysis, type Operation, dropName } from './analyze.js';
import { col, isNull, str, wrappers } from './ast.js';
import { boundAllocations } from './bounds.js';
import { replaceInfoSchema } from './info-schema.js';
import { USER_SCHEMA, physicalName } from './names.js';
import type { Node } from '@pgsql/types';
import { rewriteRead, rewriteWrite } from './policies.js';
import { addSystemColumns } from './system-columns.js';
import { assertRoundTrip } from './verify.js';
import type { AnyNode } from './parse.js';

/**
 * A table's columns, each with its type as pg_type names it (`int4`, `timestamptz`, `_text` for text[]) when that
 * is a built-in type, else ''. The rewriter copies a comparison next to the policy filter only for some types
 * (guards.ts).
 */
export type Columns = ReadonlyMap<string, string>;

/** Columns of each existing workspace table, by logical name (tables that do not exist are absent). */
export type Catalog = ReadonlyMap<string, Columns>;

/** The row filter of a (table, operation), as an expression over columns qualified by `qualifier`; null is TRUE. */
export type FilterFn = (table: string, operation: Operation, qualifier: string) => Node | null;

export interface RewriteOptions {
  workspaceId: string;
  catalog: Catalog;
  /** Without it (preview), no policy predicates are injected; soft deletes and name mapping still apply. */
  filter?: FilterFn;
}

export { ROW_CHECK_COLUMN, ROW_CHECK_FUNCTION } from './policies.js';

/**
 * Rewrites an analysed statement for one workspace, pass by pass: scoped information_schema (info-schema.ts);
 * policy predicates, soft deletes and `updated_at` on every table reference (policies.ts); logical → physical
 * names of DDL targets, indexes and constraints (here); system columns of new tables (system-columns.ts); then
 * print and verify (verify.ts).
 * Pure: the analysis is left as it was (preview and execute rewrite one parse twice). The returned text has been
 * parsed again and is exactly the rewritten tree (see verify.ts).
 */
export function rewrite(analysis: Analysis, opts: RewriteOptions): string {
  return printVerified(rewriteTree(analysis, opts));
}

/** The passes of `rewrite`, without printing: the rewritten tree (`{ version, stmts: [one RawStmt] }`). */
export function rewriteTree(analysis: Analysis, opts: RewriteOptions): AnyNode {
  // One structuredClone of the whole analysis keeps its references into the tree pointing into the copy.
  const a = structuredClone(analysis);
  const wrap = wrappers(a.parsed.tree);
  const filter = opts.filter ?? (() => null);
  const has = (table: string, column: string) => opts.catalog.get(table)?.has(column) ?? false;

  for (const ref of a.refs) {
    switch (ref.role) {
      case 'info_schema':
        replaceInfoSchema(ref, wrap, opts.workspaceId);
        break;
      case 'read':
        rewriteRead(ref, wrap, opts.workspaceId, opts.catalog.get(ref.table), [
          filter(ref.table, 'select', ref.table),
          has(ref.table, 'deleted_at') ? isNull(col(ref.table, 'deleted_at')) : undefined,
        ]);
        break;
      case 'update':
      case 'delete':
      case 'insert':
        rewriteWrite(ref, wrap, opts, filter, has);
        break;
      case 'ddl':
        ref.node.schemaname = USER_SCHEMA;
        ref.node.relname = physicalName(opts.workspaceId, ref.table);
        break;
    }
  }
  for (const { node, field, what } of a.objectNames) node[field] = physicalName(opts.workspaceId, node[field], what);
  for (const drop of a.dropLists) {
    const what = drop.removeType === 'OBJECT_INDEX' ? 'index' : 'table';
    drop.objects = (drop.objects ?? []).map((obj: Node) => ({
      List: { items: [str(USER_SCHEMA), str(physicalName(opts.workspaceId, dropName(obj), what))] },
    }));
  }
  for (const call of a.serviceCalls) call.funcname = [str(USER_SCHEMA), str('uuidv7')];
  if (a.parsed.tag === 'CreateStmt') addSystemColumns(a.parsed.stmt.CreateStmt);
  boundAllocations(a.parsed.tree);
  return a.parsed.tree;
}

/** Prints a rewritten tree and checks that the text parses back to exactly that tree (verify.ts). */
export function printVerified(tree: AnyNode): string {
  let sql: string;
  try {
    sql = deparseSync(tree, { pretty: false });
  } catch (err) {
    // The deparser knows fewer node kinds than the parser (e.g. SQL/JSON functions): refuse, never guess.
    throw new ServiceError('UNSUPPORTED', 'Unsupported SQL: a construct this service cannot rewrite', (err as Error).message);
  }
  assertRoundTrip(tree.stmts[0].stmt, sql);
  return sql;
}
