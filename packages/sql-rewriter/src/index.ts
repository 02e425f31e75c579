export { loadParser, parseOne, type AnyNode, type ParsedStatement } from './parse.js';
export { analyze, type Analysis, type Operation, type StatementKind, type TableRef, type RefRole } from './analyze.js';
export { rewrite, type Catalog, type FilterFn, type RewriteOptions, ROW_CHECK_FUNCTION, ROW_CHECK_COLUMN } from './rewrite.js';
export {
  USER_SCHEMA,
  MAX_LOGICAL_LENGTH,
  isLogicalName,
  assertLogicalName,
  physicalName,
  workspacePrefix,
  workspaceRole,
  toLogicalText,
} from './names.js';
export { ALLOWED_FUNCTIONS } from './allowlist.js';
