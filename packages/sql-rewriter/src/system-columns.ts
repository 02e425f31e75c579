import type { ColumnDef, CreateStmt, Node } from '@pgsql/types';
import { as } from './ast.js';
import { USER_SCHEMA } from './names.js';
import { parseOne } from './parse.js';

/** The system-columns pass of CREATE TABLE. */
let systemColumns: { id: Node; idUnique: Node; rest: Node[] } | undefined;
function templates() {
  if (!systemColumns) {
    const elts = (sql: string): Node[] => (parseOne(sql).stmt as { CreateStmt: CreateStmt }).CreateStmt.tableElts ?? [];
    const [id, created, updated, deleted] = elts(
      `CREATE TABLE t (id uuid PRIMARY KEY DEFAULT ${USER_SCHEMA}.uuidv7(), created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz)`,
    ) as [Node, Node, Node, Node];
    const [idUnique] = elts(`CREATE TABLE t (id uuid NOT NULL UNIQUE DEFAULT ${USER_SCHEMA}.uuidv7())`) as [Node];
    systemColumns = { id, idUnique, rest: [created, updated, deleted] };
  }
  return systemColumns;
}

/** CREATE TABLE gets id, created_at, updated_at and deleted_at unless the user defined them. */
export function addSystemColumns(create: CreateStmt) {
  create.tableElts ??= [];
  const elts = create.tableElts;
  const names = new Set(elts.map((e) => as(e, 'ColumnDef')?.colname).filter(Boolean));
  const isPk = (c: Node | undefined) => as(c, 'Constraint')?.contype === 'CONSTR_PRIMARY';
  const hasPk = elts.some((e) => isPk(e) || (as(e, 'ColumnDef')?.constraints ?? []).some(isPk));
  const t = templates();
  if (!names.has('id')) elts.unshift(structuredClone(hasPk ? t.idUnique : t.id));
  for (const c of t.rest) if (!names.has((as(c, 'ColumnDef') as ColumnDef).colname)) elts.push(structuredClone(c));
}
