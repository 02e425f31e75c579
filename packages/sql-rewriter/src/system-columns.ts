import { USER_SCHEMA } from './names.js';
import { type AnyNode, parseOne } from './parse.js';

/** The system-columns pass of CREATE TABLE. */
let systemColumns: { id: AnyNode; idUnique: AnyNode; rest: AnyNode[] } | undefined;
function templates() {
  if (!systemColumns) {
    const elts = (sql: string) => parseOne(sql).stmt.CreateStmt.tableElts.map((e: AnyNode) => e);
    const [id, created, updated, deleted] = elts(
      `CREATE TABLE t (id uuid PRIMARY KEY DEFAULT ${USER_SCHEMA}.uuidv7(), created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz)`,
    );
    const [idUnique] = elts(`CREATE TABLE t (id uuid NOT NULL UNIQUE DEFAULT ${USER_SCHEMA}.uuidv7())`);
    systemColumns = { id, idUnique, rest: [created, updated, deleted] };
  }
  return systemColumns;
}

/** CREATE TABLE gets id, created_at, updated_at and deleted_at unless the user defined them. */
export function addSystemColumns(create: AnyNode) {
  create.tableElts ??= [];
  const elts: AnyNode[] = create.tableElts;
  const names = new Set(elts.map((e) => e.ColumnDef?.colname).filter(Boolean));
  const isPk = (c: AnyNode) => c?.Constraint?.contype === 'CONSTR_PRIMARY';
  const hasPk = elts.some((e) => isPk(e) || (e.ColumnDef?.constraints ?? []).some(isPk));
  const t = templates();
  const clone = (n: AnyNode) => structuredClone(n);
  if (!names.has('id')) elts.unshift(clone(hasPk ? t.idUnique : t.id));
  for (const c of t.rest) if (!names.has(c.ColumnDef.colname)) elts.push(clone(c));
}
