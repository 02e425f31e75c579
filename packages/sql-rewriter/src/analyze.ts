import { ServiceError } from '@wds/errors';
import { type NodePath, walkSqlAst } from '@pgsql/traverse';
import { ALLOWED_ALTER_TABLE, ALLOWED_FUNCTIONS, ALLOWED_VALUE_FUNCTIONS, isForbiddenType } from './allowlist.js';
import { assertLogicalName, isLogicalName } from './names.js';
import { type AnyNode, type ParsedStatement, parseOne } from './parse.js';

/** Row-level operations, as policies name them. */
export type Operation = 'select' | 'insert' | 'update' | 'delete';

export type StatementKind = 'select' | 'insert' | 'update' | 'delete' | 'ddl';

/** How a statement refers to a table. */
export type RefRole = 'read' | 'insert' | 'update' | 'delete' | 'ddl' | 'info_schema';

export interface TableRef {
  /** The RangeVar node itself (mutated in place by the rewriter). */
  node: AnyNode;
  role: RefRole;
  /** Logical name (for info_schema: `tables` or `columns`). */
  table: string;
  /**
   * For write targets: the InsertStmt, UpdateStmt or DeleteStmt. For a read that is the only FROM item of a
   * SELECT: that SelectStmt (its simple predicates may be copied next to the policy filter, see rewrite).
   */
  owner?: AnyNode;
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
}

const unsupported = (what: string, details?: string) => new ServiceError('UNSUPPORTED', `Unsupported SQL: ${what}`, details);
const schemaDenied = (schema: string) =>
  new ServiceError(
    'SCHEMA_ACCESS_DENIED',
    `Access to schema "${schema}" is denied`,
    'Only the workspace tables (unqualified names) and information_schema.tables / information_schema.columns are available',
  );

const DML_TAGS = new Set(['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt']);
const TOP_LEVEL: Record<string, StatementKind> = {
  SelectStmt: 'select',
  InsertStmt: 'insert',
  UpdateStmt: 'update',
  DeleteStmt: 'delete',
  CreateStmt: 'ddl',
  AlterTableStmt: 'ddl',
  DropStmt: 'ddl',
  IndexStmt: 'ddl',
  RenameStmt: 'ddl',
};
/** Nodes refused wherever they appear. */
const FORBIDDEN_NODES: Record<string, string> = {
  IntoClause: 'SELECT INTO (use CREATE TABLE and INSERT … SELECT)',
  LockingClause: 'row locking clauses (FOR UPDATE / FOR SHARE)',
  ParamRef: 'parameters ($1): send literal values',
  MergeStmt: 'MERGE (use INSERT … ON CONFLICT)',
  CreateTableAsStmt: 'CREATE TABLE AS',
  RangeTableFunc: 'XMLTABLE',
};

const sval = (n: AnyNode): string | undefined => n?.String?.sval;

/** Parses, classifies and checks one statement, collecting every table reference and its operation. */
export function analyze(sql: string): Analysis {
  // The parser reads a C string: anything after a NUL byte would be silently ignored.
  if (sql.includes('\u0000')) throw new ServiceError('PARSE_ERROR', 'SQL must not contain NUL bytes');
  const parsed = parseOne(sql);
  const { tag, stmt } = parsed;
  if (tag === 'TransactionStmt') {
    throw new ServiceError('TRANSACTION_NOT_ALLOWED', 'Transaction statements are not allowed', 'each request runs in its own transaction');
  }
  const kind = TOP_LEVEL[tag];
  if (!kind) throw unsupported(tag.replace(/Stmt$/, ''), 'allowed: SELECT, INSERT, UPDATE, DELETE, CREATE/ALTER/DROP TABLE, CREATE/DROP INDEX');
  checkDdl(tag, stmt[tag]);

  const returning = (stmt[tag]?.returningClause?.exprs?.length ?? 0) > 0;
  const a: Analysis = { parsed, kind, writes: false, returning, refs: [], tables: [], access: [], objectNames: [], dropLists: [] };
  walkSqlAst(parsed.tree, (path) => visit(path, a));
  if (tag === 'DropStmt') a.dropLists.push(stmt.DropStmt);
  collectObjectNames(tag, stmt[tag], a);

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
  if (tag === 'DropStmt') {
    for (const obj of stmt.DropStmt.objects ?? []) {
      const name = dropName(obj);
      if (stmt.DropStmt.removeType === 'OBJECT_TABLE' && !seenTables.has(name)) {
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
      const ops: Operation[] = ['insert'];
      if (ref.owner?.onConflictClause?.action === 'ONCONFLICT_UPDATE') ops.push('update');
      if (ref.owner?.returningClause?.exprs?.length) ops.push('select');
      return ops;
    }
    case 'update':
    case 'delete':
      return ref.owner?.returningClause?.exprs?.length ? [ref.role, 'select'] : [ref.role];
    case 'ddl':
    case 'info_schema':
      return [];
  }
}

function visit(path: NodePath, a: Analysis): void {
  const { tag, node } = path;
  const forbidden = FORBIDDEN_NODES[tag];
  if (forbidden) throw unsupported(forbidden);
  if (tag.endsWith('Stmt') && tag !== 'RawStmt' && !DML_TAGS.has(tag) && path.parent?.tag !== 'RawStmt') {
    throw unsupported(`nested ${tag.replace(/Stmt$/, '')}`);
  }
  switch (tag) {
    case 'RangeVar':
      visitRangeVar(path, a);
      return;
    case 'FuncCall':
      checkFunction(node);
      return;
    case 'TypeName':
      checkType(node);
      return;
    case 'SelectStmt':
      // The deparser drops DISTINCT here, which would silently change the result.
      if (node.groupDistinct) throw unsupported('GROUP BY DISTINCT');
      return;
    case 'SQLValueFunction':
      if (!ALLOWED_VALUE_FUNCTIONS.has(node.op)) throw unsupported(`${String(node.op).replace('SVFOP_', '')} is not available`);
      return;
    case 'CreateStmt':
      if (node.relation?.relpersistence === 't') throw unsupported('temporary tables');
      if (node.inhRelations?.length) throw unsupported('table inheritance');
      if (node.partspec || node.partbound) throw unsupported('partitioned tables');
      if (node.ofTypename) throw unsupported('typed tables');
      if (node.tablespacename) throw unsupported('tablespaces');
      return;
    case 'IndexStmt':
      if (node.concurrent) throw unsupported('CREATE INDEX CONCURRENTLY');
      if (node.tableSpace) throw unsupported('tablespaces');
      return;
    case 'ColumnDef':
      if (node.collClause?.collname?.length > 1) throw unsupported('schema-qualified collations');
      return;
  }
}

function checkFunction(node: AnyNode): void {
  const parts: string[] = (node.funcname ?? []).map(sval);
  const name = parts.at(-1) ?? '';
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog')) {
    throw unsupported(`function ${parts.join('.')}`, 'schema-qualified functions are not allowed');
  }
  if (!ALLOWED_FUNCTIONS.has(name)) throw unsupported(`function ${name}() is not allowed`);
}

function checkType(node: AnyNode): void {
  const parts: string[] = (node.names ?? []).map(sval);
  const name = parts.at(-1) ?? '';
  if (node.pct_type) throw unsupported('%TYPE references');
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog')) {
    throw new ServiceError('SCHEMA_ACCESS_DENIED', `Type ${parts.join('.')} is not available`);
  }
  if (isForbiddenType(name)) throw unsupported(`type ${name}`);
}

/** The CTE names visible at `path`: for each enclosing WITH, all of its CTEs — or, inside the body of a
 *  non-recursive CTE, only those before it (PostgreSQL's scoping, so `WITH pg_class AS (SELECT * FROM pg_class)`
 *  maps the inner name to a workspace table rather than the catalog). */
function visibleCtes(path: NodePath): Set<string> {
  const names = new Set<string>();
  for (let anc = path.parent; anc; anc = anc.parent) {
    const withClause = DML_TAGS.has(anc.tag) ? anc.node.withClause : undefined;
    if (!withClause) continue;
    const ctes: string[] = (withClause.ctes ?? []).map((c: AnyNode) => c.CommonTableExpr?.ctename);
    const rel = path.keyPath.slice(anc.keyPath.length);
    const inCte = rel[0] === 'withClause' && rel[1] === 'ctes' ? Number(rel[2]) : -1;
    const visible = inCte >= 0 && !withClause.recursive ? ctes.slice(0, inCte) : ctes;
    for (const n of visible) names.add(n);
  }
  return names;
}

function visitRangeVar(path: NodePath, a: Analysis): void {
  const rv = path.node;
  const parent = path.parent;
  const key = path.keyPath.slice((parent?.keyPath.length ?? 0))[0];
  if (rv.catalogname) throw schemaDenied(rv.catalogname);

  let role: RefRole;
  let owner: AnyNode | undefined;
  switch (parent?.tag) {
    case 'SelectStmt':
      role = 'read';
      if (key === 'fromClause' && parent.node.fromClause?.length === 1) owner = parent.node;
      break;
    case 'JoinExpr':
      role = 'read';
      break;
    case 'UpdateStmt':
      role = key === 'relation' ? 'update' : 'read';
      owner = parent.node;
      break;
    case 'DeleteStmt':
      role = key === 'relation' ? 'delete' : 'read';
      owner = parent.node;
      break;
    case 'InsertStmt':
      role = 'insert';
      owner = parent.node;
      break;
    case 'CreateStmt':
    case 'AlterTableStmt':
    case 'IndexStmt':
    case 'RenameStmt':
    case 'Constraint':
    case 'TableLikeClause':
      role = 'ddl';
      break;
    default:
      throw unsupported(`a table reference inside ${parent?.tag ?? 'this statement'}`);
  }

  if (rv.schemaname) {
    if (rv.schemaname === 'information_schema' && role === 'read' && (rv.relname === 'tables' || rv.relname === 'columns')) {
      a.refs.push({ node: rv, role: 'info_schema', table: rv.relname });
      return;
    }
    throw schemaDenied(rv.schemaname);
  }
  // A CTE reference is only possible where a query reads; write targets and DDL always name tables.
  if (role === 'read' && visibleCtes(path).has(rv.relname)) return;
  assertLogicalName(rv.relname);
  a.refs.push({ node: rv, role, table: rv.relname, ...(owner ? { owner } : {}) });
}

function checkDdl(tag: string, node: AnyNode): void {
  switch (tag) {
    case 'AlterTableStmt':
      if (node.objtype !== 'OBJECT_TABLE') throw unsupported('ALTER of anything but a table');
      for (const c of node.cmds ?? []) {
        const subtype = c.AlterTableCmd?.subtype;
        if (!ALLOWED_ALTER_TABLE.has(subtype)) throw unsupported(`ALTER TABLE action ${String(subtype).replace('AT_', '')}`);
      }
      return;
    case 'DropStmt':
      if (node.removeType !== 'OBJECT_TABLE' && node.removeType !== 'OBJECT_INDEX') {
        throw unsupported(`DROP ${String(node.removeType).replace('OBJECT_', '')}`);
      }
      if (node.concurrent) throw unsupported('DROP INDEX CONCURRENTLY');
      for (const obj of node.objects ?? []) {
        const items = obj.List?.items ?? [];
        if (items.length !== 1) throw schemaDenied(sval(items[0]) ?? '?');
        assertLogicalName(dropName(obj), node.removeType === 'OBJECT_INDEX' ? 'index' : 'table');
      }
      return;
    case 'RenameStmt':
      if (!['OBJECT_TABLE', 'OBJECT_COLUMN', 'OBJECT_TABCONSTRAINT', 'OBJECT_INDEX'].includes(node.renameType)) {
        throw unsupported(`RENAME of ${String(node.renameType).replace('OBJECT_', '')}`);
      }
      return;
  }
}

export const dropName = (obj: AnyNode): string => sval(obj.List?.items?.[0]) ?? '';

/** Index and constraint names share the schema across workspaces, so they are mapped like table names. */
function collectObjectNames(tag: string, node: AnyNode, a: Analysis): void {
  const add = (n: AnyNode, field: string, what: string) => {
    if (n?.[field] === undefined) return;
    assertLogicalName(n[field], what);
    a.objectNames.push({ node: n, field, what });
  };
  const constraint = (c: AnyNode) => {
    add(c, 'conname', 'constraint');
    add(c, 'indexname', 'index');
  };
  switch (tag) {
    case 'CreateStmt':
      for (const el of node.tableElts ?? []) {
        if (el.Constraint) constraint(el.Constraint);
        for (const c of el.ColumnDef?.constraints ?? []) constraint(c.Constraint);
      }
      return;
    case 'AlterTableStmt':
      for (const c of node.cmds ?? []) {
        const cmd = c.AlterTableCmd;
        if (cmd.def?.Constraint) constraint(cmd.def.Constraint);
        for (const cc of cmd.def?.ColumnDef?.constraints ?? []) constraint(cc.Constraint);
        if (cmd.subtype === 'AT_DropConstraint' || cmd.subtype === 'AT_ValidateConstraint') add(cmd, 'name', 'constraint');
      }
      return;
    case 'IndexStmt':
      add(node, 'idxname', 'index');
      return;
    case 'RenameStmt':
      if (node.renameType === 'OBJECT_TABLE') add(node, 'newname', 'table');
      if (node.renameType === 'OBJECT_INDEX') add(node, 'newname', 'index');
      if (node.renameType === 'OBJECT_TABCONSTRAINT') {
        add(node, 'subname', 'constraint');
        add(node, 'newname', 'constraint');
      }
      return;
  }
}

export { isLogicalName };
