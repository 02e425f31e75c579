import type { AlterTableStmt, Constraint, CreateStmt, IndexStmt, Node, RenameStmt } from '@pgsql/types';
import type { Analysis } from './analyze.js';
import { assertLogicalName } from './names.js';

/**
 * Index and constraint names share the schema across workspaces, so they are mapped like table names: each name
 * field is recorded as `{ node, field, what }` and the rewriter replaces it with the physical name. (`ON CONFLICT
 * ON CONSTRAINT name` is recorded by the InferClause rule, wherever the INSERT is.)
 */
export function collectObjectNames(tag: string, node: unknown, a: Analysis): void {
  const add = (n: object, field: string, what: string) => {
    const value = (n as Record<string, unknown>)[field];
    if (value === undefined) return;
    assertLogicalName(String(value), what);
    a.objectNames.push({ node: n, field, what });
  };
  const constraint = (c: Constraint) => {
    add(c, 'conname', 'constraint');
    add(c, 'indexname', 'index');
  };
  const constraintsOf = (n: Node | undefined): Constraint[] => {
    if (!n) return [];
    if ('Constraint' in n) return [n.Constraint];
    if ('ColumnDef' in n) return (n.ColumnDef.constraints ?? []).flatMap((c) => ('Constraint' in c ? [c.Constraint] : []));
    return [];
  };
  switch (tag) {
    case 'CreateStmt':
      for (const el of (node as CreateStmt).tableElts ?? []) constraintsOf(el).forEach(constraint);
      return;
    case 'AlterTableStmt':
      for (const c of (node as AlterTableStmt).cmds ?? []) {
        if (!('AlterTableCmd' in c)) continue;
        const cmd = c.AlterTableCmd;
        constraintsOf(cmd.def).forEach(constraint);
        if (cmd.subtype === 'AT_DropConstraint' || cmd.subtype === 'AT_ValidateConstraint') add(cmd, 'name', 'constraint');
      }
      return;
    case 'IndexStmt':
      add(node as IndexStmt, 'idxname', 'index');
      return;
    case 'RenameStmt': {
      const r = node as RenameStmt;
      if (r.renameType === 'OBJECT_TABLE') add(r, 'newname', 'table');
      if (r.renameType === 'OBJECT_INDEX') add(r, 'newname', 'index');
      if (r.renameType === 'OBJECT_TABCONSTRAINT') {
        add(r, 'subname', 'constraint');
        add(r, 'newname', 'constraint');
      }
      return;
    }
  }
}
