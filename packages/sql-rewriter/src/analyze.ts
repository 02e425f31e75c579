import type { DeleteStmt, FuncCall, InsertStmt, RangeVar, SelectStmt, UpdateStmt } from '@pgsql/types';
import { ServiceError } from '@wds/errors';
import { classify, dropName } from './classify.js';
import { isLogicalName } from './names.js';
import { collectObjectNames } from './object-names.js';
import { type AnyNode, type ParsedStatement, parseOne } from './parse.js';
import { applyRule } from './rules.js';
import { tooDeep, walk } from './walk.js';

/** Table references one statement may have (PostgreSQL plans a few dozen joins well; this bounds the rewrite). */
export const MAX_TABLE_REFERENCES = 250;

/** Row-level operations, as policies name them. */
export type Operation = 'select' | 'insert' | 'update' | 'delete';

export type StatementKind = 'select' | 'insert' | 'update' | 'delete' | 'ddl';

/** How a statement refers to a table. */
export type RefRole = 'read' | 'insert' | 'update' | 'delete' | 'ddl' | 'info_schema';

export interface TableRef {
  /** The RangeVar node itself (the rewriter mutates a copy of it). */
  node: RangeVar;
  role: RefRole;
  /** Logical name (for info_schema: `tables` or `columns`). */
  table: string;
  /**
   * For write targets: the InsertStmt, UpdateStmt or DeleteStmt. For a read that is the only FROM item of a
   * SELECT: that SelectStmt (its simple predicates may be copied next to the policy filter, see rewrite).
   */
  owner?: InsertStmt | UpdateStmt | DeleteStmt | SelectStmt;
}

export interface Analysis {
  parsed: ParsedStatement;
  kind: StatementKind;
  /** True when any part of the statement writes (also a SELECT with a data-modifying CTE). */
  writes: boolean;
  /** True when the top-level statement has a RETURNING list of the user's own. */
  returning: boolean;
  refs: TableRef[];
  /** Logical tables in order of first appearance. */
  tables: string[];
  /** Every (table, operation) pair the policies must allow. */
  access: { table: string; operation: Operation }[];
  /** Index and constraint names to map, as [node, field] pairs. */
  objectNames: { node: AnyNode; field: string; what: string }[];
  /** DROP TABLE / DROP INDEX name lists to map. */
  dropLists: AnyNode[];
  /** Unqualified calls of the service's own functions in user_data (uuidv7), to qualify. */
  serviceCalls: FuncCall[];
}

/**
 * Parses, classifies and checks one statement, collecting every table reference and its operation, in three
 * passes: classify the statement (classify.ts); check every node against the rule table and record table
 * references (rules.ts, walk.ts); collect the index and constraint names to map (object-names.ts).
 */
export function analyze(sql: string): Analysis {
  // The parser reads a C string: anything after a NUL byte would be silently ignored.
  if (sql.includes('\u0000')) throw new ServiceError('PARSE_ERROR', 'SQL must not contain NUL bytes');
  return analyzeParsed(parseOne(sql));
}

/** `analyze` of a statement parsed with `parseOne` (the tree becomes the analysis's: rewrite() copies it). */
export function analyzeParsed(parsed: ParsedStatement): Analysis {
  try {
    return analyzeUnguarded(parsed);
  } catch (err) {
    // The walk is iterative, but a stack overflow elsewhere (the parser's JSON, a future recursive check) must
    // still be a client error, never an HTTP 500.
    if (err instanceof RangeError) throw tooDeep();
    throw err;
  }
}

function analyzeUnguarded(parsed: ParsedStatement): Analysis {
  const { tag, stmt } = parsed;
  const node = stmt[tag];
  const kind = classify(tag, node);

  const returning = (node?.returningClause?.exprs?.length ?? 0) > 0;
  const a: Analysis = { parsed, kind, writes: false, returning, refs: [], tables: [], access: [], objectNames: [], dropLists: [], serviceCalls: [] };
  walk(parsed.tree, 'ParseResult', (path) => applyRule(path, a));
  if (a.refs.length > MAX_TABLE_REFERENCES) {
    // Each reference becomes a filtered subquery: a million of them would print (and re-parse) as tens of MB.
    throw new ServiceError('UNSUPPORTED', `Unsupported SQL: more than ${MAX_TABLE_REFERENCES} table references in one statement`);
  }
  if (tag === 'DropStmt') a.dropLists.push(node);
  collectObjectNames(tag, node, a);

  const seenTables = new Set<string>();
  const seenAccess = new Set<string>();
  for (const ref of a.refs) {
    if (ref.role === 'info_schema') continue;
    if (!seenTables.has(ref.table)) {
      seenTables.add(ref.table);
      a.tables.push(ref.table);
    }
    for (const operation of operationsOf(ref)) {
      const key = `${ref.table}\u0000${operation}`;
      if (!seenAccess.has(key)) {
        seenAccess.add(key);
        a.access.push({ table: ref.table, operation });
      }
    }
  }
  if (tag === 'DropStmt' && node.removeType === 'OBJECT_TABLE') {
    for (const obj of node.objects ?? []) {
      const name = dropName(obj);
      if (!seenTables.has(name)) {
        seenTables.add(name);
        a.tables.push(name);
      }
    }
  }
  a.writes = a.refs.some((r) => r.role === 'insert' || r.role === 'update' || r.role === 'delete');
  return a;
}

function operationsOf(ref: TableRef): Operation[] {
  switch (ref.role) {
    case 'read':
      return ['select'];
    case 'insert': {
      // An upsert reads the conflicting row; RETURNING shows the new one.
      const insert = ref.owner as InsertStmt | undefined;
      const upsert = insert?.onConflictClause?.action === 'ONCONFLICT_UPDATE';
      const ops: Operation[] = upsert ? ['insert', 'update'] : ['insert'];
      if (upsert || insert?.returningClause?.exprs?.length) ops.push('select');
      return ops;
    }
    case 'update':
    case 'delete':
      // UPDATE and DELETE read the rows they change (WHERE, SET, RETURNING, the count): they touch only rows the
      // caller may also select, as PostgreSQL's row-level security does, so they need select permission.
      return [ref.role, 'select'];
    case 'ddl':
    case 'info_schema':
      return [];
  }
}

export { dropName, isLogicalName };
