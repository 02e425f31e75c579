export {
  loadParser,
  parseOne,
  parseSqlTree,
  checkSqlText,
  parserStatus,
  MAX_SQL_BYTES,
  MAX_DERIVED_SQL_BYTES,
  type AnyNode,
  type ParsedStatement,
  type ParserStatus,
} from './parse.js';
export { analyze, analyzeParsed, type Analysis, type Operation, type StatementKind, type TableRef, type RefRole } from './analyze.js';
export { printExpression } from './expression.js';
export { rewrite, rewriteTree, printVerified, type Catalog, type Columns, type FilterFn, type RewriteOptions, ROW_CHECK_FUNCTION, ROW_CHECK_COLUMN } from './rewrite.js';
export { assertRoundTrip, firstDifference, onRoundTripMismatch, type MismatchReporter } from './verify.js';
export {
  USER_SCHEMA,
  MAX_LOGICAL_LENGTH,
  LOGICAL_NAME,
  isLogicalName,
  assertLogicalName,
  physicalName,
  workspacePrefix,
  workspaceRole,
  toLogicalText,
} from './names.js';
export { ALLOWED_COLLATIONS, ALLOWED_FUNCTIONS, ALLOWED_OPCLASSES, ALLOWED_TYPES } from './allowlist.js';
export { RULES, type Rule, type Handler } from './rules.js';
export { MAX_DEPTH, type NodeTag, type Path } from './walk.js';
export {
  shapeOf,
  lexicalShape,
  learnLexical,
  constantsOf,
  fillTemplate,
  buildTemplate,
  MAX_SHAPED_SQL_CHARS,
  type Shape,
  type LexicalShape,
  type LexicalMap,
  type Template,
  type Constant,
  type ConstantKind,
} from './templates.js';
