import { ServiceError } from '@wds/errors';
import type { TableRef } from './analyze.js';
import { type Wrappers, replaceWrapper } from './ast.js';
import { USER_SCHEMA, workspacePrefix } from './names.js';
import { parseOne } from './parse.js';

/**
 * The information_schema pass: `tables` and `columns` become subqueries over this workspace's tables only, fenced
 * (OFFSET 0) like a filtered table, so the user's WHERE never runs on a row before the workspace's scope did.
 */
export function replaceInfoSchema(ref: TableRef, wrap: Wrappers, workspaceId: string) {
  const prefix = workspacePrefix(workspaceId);
  const from = `FROM information_schema.${ref.table} c WHERE c.table_schema = '${USER_SCHEMA}' AND starts_with(c.table_name::text, '${prefix}') OFFSET 0`;
  const strip = (e: string) => `substr(${e}::text, ${prefix.length + 1})`;
  // The prefix is derived from a UUID (hex digits and underscores), so it is safe inside these literals.
  const sql =
    ref.table === 'tables'
      ? `SELECT c.table_catalog::text AS table_catalog, 'public'::text AS table_schema, ${strip('c.table_name')} AS table_name, c.table_type::text AS table_type ${from}`
      : `SELECT c.table_catalog::text AS table_catalog, 'public'::text AS table_schema, ${strip('c.table_name')} AS table_name, c.column_name::text AS column_name, c.ordinal_position::int AS ordinal_position, regexp_replace(replace(c.column_default::text, '${USER_SCHEMA}.', ''), 'ws_[0-9a-f_]{36}_', '', 'g') AS column_default, c.is_nullable::text AS is_nullable, c.data_type::text AS data_type, c.character_maximum_length::int AS character_maximum_length, c.numeric_precision::int AS numeric_precision, c.numeric_scale::int AS numeric_scale, c.udt_name::text AS udt_name ${from}`;
  const wrapper = wrap.get(ref.node);
  if (!wrapper) throw new ServiceError('INTERNAL_ERROR', 'information_schema reference without a node wrapper');
  replaceWrapper(wrapper, { RangeSubselect: { subquery: parseOne(sql).stmt, alias: ref.node.alias ?? { aliasname: ref.table } } });
}

