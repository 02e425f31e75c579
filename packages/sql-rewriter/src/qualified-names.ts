import type { Node, TypeName } from '@pgsql/types';
import { ServiceError } from '@wds/errors';
import {
  ALLOWED_COLLATIONS,
  ALLOWED_FUNCTIONS,
  ALLOWED_OPCLASSES,
  ALLOWED_TYPES,
  SERIAL_TYPES,
} from './allowlist.js';

/**
 * Every qualified name in user SQL — function, type, operator, collation, operator class — resolves either to an
 * allow-listed system object (unqualified or `pg_catalog.`) or is refused. Unqualified names are safe because
 * `pg_catalog` is searched first and a workspace cannot create functions, types, operators or collations.
 */

export const unsupported = (what: string, details?: string) => new ServiceError('UNSUPPORTED', `Unsupported SQL: ${what}`, details);
export const schemaDenied = (schema: string) =>
  new ServiceError(
    'SCHEMA_ACCESS_DENIED',
    `Access to schema "${schema}" is denied`,
    'Only the workspace tables (unqualified names) and information_schema.tables / information_schema.columns are available',
  );

/** The identifiers of a name list (`[pg_catalog, int4]`); anything but identifiers is refused. */
export function nameParts(names: readonly Node[] | undefined, what: string): string[] {
  const parts: string[] = [];
  for (const n of names ?? []) {
    if (!('String' in n)) throw unsupported(`${what} name`);
    parts.push(n.String.sval ?? '');
  }
  return parts;
}

/** `[name]` or `[pg_catalog, name]` → name; another schema → SCHEMA_ACCESS_DENIED. */
function systemName(parts: string[], what: string): string {
  if (parts.length === 0) throw unsupported(`empty ${what} name`);
  if (parts.length > 2) throw schemaDenied(parts.slice(0, -1).join('.'));
  if (parts.length === 2 && parts[0] !== 'pg_catalog') throw schemaDenied(parts[0] as string);
  return parts.at(-1) as string;
}

export function checkFunctionName(names: readonly Node[] | undefined): void {
  const parts = nameParts(names, 'function');
  const name = parts.at(-1) ?? '';
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog')) {
    throw unsupported(`function ${parts.join('.')}`, 'schema-qualified functions are not allowed');
  }
  if (!ALLOWED_FUNCTIONS.has(name)) throw unsupported(`function ${name}() is not allowed`);
}

/**
 * A type must be allow-listed, or an array (`_name`, `name[]`) of an allow-listed type: catalog types also leak
 * through their array types (`_regclass`, `_oid`, `_aclitem`), and a table's row type (`_ws_<id>_<table>`) names
 * another workspace's table. `serial` & co. only in a column definition, where PostgreSQL expands them.
 */
export function checkTypeName(t: TypeName, inColumnDefinition: boolean): void {
  if (t.pct_type) throw unsupported('%TYPE references');
  if (t.setof) throw unsupported('SETOF types');
  if (t.typeOid) throw unsupported('types given by OID');
  const parts = nameParts(t.names, 'type');
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog')) {
    throw new ServiceError('SCHEMA_ACCESS_DENIED', `Type ${parts.join('.')} is not available`);
  }
  const name = parts.at(-1) ?? '';
  const base = name.startsWith('_') ? name.slice(1) : name;
  if (ALLOWED_TYPES.has(base)) return;
  if (inColumnDefinition && parts.length === 1 && SERIAL_TYPES.has(name) && !t.arrayBounds?.length) return;
  throw unsupported(`type ${parts.join('.')} is not available`);
}

/** Operators (`OPERATOR(schema.op)`, `ANY`/`ALL`, `ORDER BY … USING`, `EXCLUDE … WITH`): unqualified or pg_catalog. */
export function checkOperatorName(names: readonly Node[] | undefined): void {
  if (!names?.length) return;
  systemName(nameParts(names, 'operator'), 'operator');
}

export function checkCollationName(names: readonly Node[] | undefined): void {
  if (!names?.length) return;
  const name = systemName(nameParts(names, 'collation'), 'collation');
  if (!ALLOWED_COLLATIONS.has(name)) {
    throw unsupported(`collation "${name}" is not available`, `allowed: ${[...ALLOWED_COLLATIONS].join(', ')}`);
  }
}

/** Operator classes are never schema-qualified: a qualified class could only be someone else's. */
export function checkOpclassName(names: readonly Node[] | undefined): void {
  if (!names?.length) return;
  const parts = nameParts(names, 'operator class');
  if (parts.length > 1) {
    if (parts.length === 2 && parts[0] === 'pg_catalog') throw unsupported('schema-qualified operator classes (write the bare name)');
    throw schemaDenied(parts.slice(0, -1).join('.'));
  }
  const name = parts[0] as string;
  if (!ALLOWED_OPCLASSES.has(name)) throw unsupported(`operator class ${name} is not available`);
}
