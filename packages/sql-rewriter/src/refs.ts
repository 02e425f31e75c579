import type { CommonTableExpr, Node, RangeVar, WithClause } from '@pgsql/types';
import type { Analysis, RefRole, TableRef } from './analyze.js';
import { assertLogicalName } from './names.js';
import { schemaDenied, unsupported } from './qualified-names.js';
import type { Path } from './walk.js';

const DML_TAGS: ReadonlySet<string> = new Set(['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt']);

/**
 * The CTE names visible at `path`: for each enclosing WITH, all of its CTEs — or, inside the body of a
 * non-recursive CTE, only those before it (PostgreSQL's scoping, so `WITH pg_class AS (SELECT * FROM pg_class)`
 * maps the inner name to a workspace table rather than the catalog). One walk up the ancestors.
 */
export function visibleCtes(path: Path): Set<string> {
  const names = new Set<string>();
  // `below` is the step just under `anc` on the way to `path`, `belowThat` the one under it.
  let belowThat: Path | null = null;
  let below: Path = path;
  for (let anc = path.parent; anc; belowThat = below, below = anc, anc = anc.parent) {
    const withClause: WithClause | undefined = DML_TAGS.has(anc.tag) ? anc.node.withClause : undefined;
    if (!withClause) continue;
    const ctes = (withClause.ctes ?? []).map((c: Node) => ('CommonTableExpr' in c ? (c.CommonTableExpr as CommonTableExpr).ctename : undefined));
    const inCte = below.field === 'withClause' && belowThat?.field === 'ctes' ? (belowThat.index ?? -1) : -1;
    const visible = inCte >= 0 && !withClause.recursive ? ctes.slice(0, inCte) : ctes;
    for (const n of visible) if (n !== undefined) names.add(n);
  }
  return names;
}

/** The rule of a RangeVar: how the statement uses the table, which logical table it is, or a refusal. */
export function checkRangeVar(path: Path, a: Analysis): void {
  const rv = path.node as RangeVar;
  const parent = path.parent;
  const key = path.field;
  if (rv.catalogname) throw schemaDenied(rv.catalogname);

  let role: RefRole;
  let owner: TableRef['owner'];
  switch (parent?.tag) {
    case 'SelectStmt':
      if (key !== 'fromClause') throw unsupported(`a table reference in ${key}`);
      role = 'read';
      if (parent.node.fromClause?.length === 1) owner = parent.node;
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

  const relname = rv.relname ?? '';
  if (rv.schemaname) {
    if (rv.schemaname === 'information_schema' && role === 'read' && (relname === 'tables' || relname === 'columns')) {
      a.refs.push({ node: rv, role: 'info_schema', table: relname });
      return;
    }
    throw schemaDenied(rv.schemaname);
  }
  // A CTE reference is only possible where a query reads; write targets and DDL always name tables.
  if (role === 'read' && visibleCtes(path).has(relname)) return;
  assertLogicalName(relname);
  a.refs.push({ node: rv, role, table: relname, ...(owner ? { owner } : {}) });
}
