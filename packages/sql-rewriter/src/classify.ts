import type { AlterTableStmt, DropStmt, Node, RenameStmt } from '@pgsql/types';
import { ServiceError } from '@wds/errors';
import type { StatementKind } from './analyze.js';
import { ALLOWED_ALTER_TABLE } from './allowlist.js';
import { assertLogicalName } from './names.js';
import { nameParts, schemaDenied, unsupported } from './qualified-names.js';
import { RULES } from './rules.js';
import type { NodeTag } from './walk.js';

/** The statements a workspace may run, and how the service reports them. */
const TOP_LEVEL: Partial<Record<NodeTag, StatementKind>> = {
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
const ALLOWED = 'allowed: SELECT, INSERT, UPDATE, DELETE, CREATE/ALTER/DROP TABLE, CREATE/DROP INDEX, ALTER TABLE … RENAME';

export const dropName = (obj: Node): string => {
  const first = 'List' in obj ? obj.List.items?.[0] : undefined;
  return first && 'String' in first ? (first.String.sval ?? '') : '';
};

/** Classifies the top-level statement and checks what only the statement as a whole can tell. */
export function classify(tag: string, node: unknown): StatementKind {
  if (tag === 'TransactionStmt') {
    throw new ServiceError('TRANSACTION_NOT_ALLOWED', 'Transaction statements are not allowed', 'each request runs in its own transaction');
  }
  const kind = TOP_LEVEL[tag as NodeTag];
  if (!kind) {
    const rule = Object.hasOwn(RULES, tag) ? RULES[tag as NodeTag] : undefined;
    throw unsupported(rule && typeof rule === 'object' ? rule.refuse : tag.replace(/Stmt$/, ''), ALLOWED);
  }
  switch (tag) {
    case 'AlterTableStmt': {
      const s = node as AlterTableStmt;
      if (s.objtype !== 'OBJECT_TABLE') throw unsupported('ALTER of anything but a table');
      for (const c of s.cmds ?? []) {
        const subtype = 'AlterTableCmd' in c ? c.AlterTableCmd.subtype : undefined;
        if (!subtype || !ALLOWED_ALTER_TABLE.has(subtype)) throw unsupported(`ALTER TABLE action ${String(subtype).replace('AT_', '')}`);
      }
      break;
    }
    case 'DropStmt': {
      const s = node as DropStmt;
      if (s.removeType !== 'OBJECT_TABLE' && s.removeType !== 'OBJECT_INDEX') {
        throw unsupported(`DROP ${String(s.removeType).replace('OBJECT_', '')}`);
      }
      if (s.concurrent) throw unsupported('DROP INDEX CONCURRENTLY');
      for (const obj of s.objects ?? []) {
        const parts = nameParts('List' in obj ? obj.List.items : undefined, s.removeType === 'OBJECT_INDEX' ? 'index' : 'table');
        if (parts.length !== 1) throw schemaDenied(parts[0] ?? '?');
        assertLogicalName(dropName(obj), s.removeType === 'OBJECT_INDEX' ? 'index' : 'table');
      }
      break;
    }
    case 'RenameStmt': {
      const s = node as RenameStmt;
      if (!['OBJECT_TABLE', 'OBJECT_COLUMN', 'OBJECT_TABCONSTRAINT', 'OBJECT_INDEX'].includes(s.renameType ?? '')) {
        throw unsupported(`RENAME of ${String(s.renameType).replace('OBJECT_', '')}`);
      }
      // ALTER VIEW / MATERIALIZED VIEW / FOREIGN TABLE … RENAME COLUMN also parse as OBJECT_COLUMN.
      if (s.renameType === 'OBJECT_COLUMN' && s.relationType !== 'OBJECT_TABLE') {
        throw unsupported(`RENAME COLUMN of ${String(s.relationType).replace('OBJECT_', '')}`);
      }
      break;
    }
  }
  return kind;
}
