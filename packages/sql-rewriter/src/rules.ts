import type {
  A_Expr,
  AlterTableCmd,
  ColumnDef,
  Constraint,
  CreateStmt,
  FuncCall,
  IndexElem,
  IndexStmt,
  InferClause,
  List,
  Node,
  SQLValueFunction,
  SelectStmt,
  SortBy,
  SubLink,
  TypeName,
} from '@pgsql/types';
import type { Analysis } from './analyze.js';
import { ALLOWED_ALTER_TABLE, ALLOWED_COMPRESSION, ALLOWED_INDEX_METHODS, ALLOWED_VALUE_FUNCTIONS } from './allowlist.js';
import { assertLogicalName } from './names.js';
import { checkOption } from './options.js';
import {
  checkCollationName,
  checkFunctionName,
  checkOpclassName,
  checkOperatorName,
  checkTypeName,
  unsupported,
} from './qualified-names.js';
import { checkRangeVar } from './refs.js';
import type { NodeTag, Path } from './walk.js';

/**
 * What may appear in user SQL, decided for every node kind of the parser. `pass`: allowed, its children are
 * checked in turn; `{ refuse }`: UNSUPPORTED with the reason; a handler: checks the node (and may record table
 * references or names to map in the analysis). The table is a `Record<NodeTag, Rule>`: a libpg-query upgrade that
 * adds a node kind fails to compile until the new kind is decided here, and at run time an unknown tag is refused.
 */
export type Handler = (path: Path, a: Analysis) => void;
export type Rule = 'pass' | { refuse: string } | Handler;

// Nodes of parse analysis and planning (Query, Var, OpExpr, …). The raw parser never produces them; if one showed
// up it would bypass the checks written for the raw forms, so refuse.
const INTERNAL: Rule = { refuse: 'an internal node the SQL parser never produces' };
const NOT_A_TREE: Rule = { refuse: 'a node that is not part of a parse tree' };
// SQL/JSON (JSON_TABLE, JSON_VALUE, JSON_QUERY, JSON_EXISTS, JSON_OBJECT, JSON_ARRAY, JSON_OBJECTAGG, JSON(),
// JSON_SCALAR, JSON_SERIALIZE, IS JSON): PostgreSQL 15, which the service supports, has none of it, and
// pgsql-deparser prints several of these nodes wrongly, so the SQL we run could differ from what was sent.
const SQL_JSON: Rule = {
  refuse: 'SQL/JSON syntax (JSON_TABLE, JSON_VALUE, JSON_QUERY, JSON_EXISTS, JSON_OBJECT, JSON_ARRAY, IS JSON, …) is not supported; use the jsonb functions and operators',
};
const stmt = (what: string): Rule => ({ refuse: what });
const PARTITIONS: Rule = { refuse: 'partitioned tables' };

const list = (n: Node | undefined): Node[] | undefined => (n && 'List' in n ? (n.List as List).items : undefined);

/** DDL statements are top-level only (the grammar never nests them in an allowed statement; this makes it sure). */
const topLevel =
  (what: string, check?: (node: never) => void): Handler =>
  (path) => {
    if (path.parent?.tag !== 'RawStmt') throw unsupported(`nested ${what}`);
    check?.(path.node as never);
  };

function checkCreate(c: CreateStmt): void {
  if (c.relation?.relpersistence === 't') throw unsupported('temporary tables');
  if (c.inhRelations?.length) throw unsupported('table inheritance');
  if (c.partspec || c.partbound) throw unsupported('partitioned tables');
  if (c.ofTypename) throw unsupported('typed tables');
  if (c.tablespacename) throw unsupported('tablespaces');
  if (c.accessMethod !== undefined && c.accessMethod !== 'heap') throw unsupported(`table access method ${c.accessMethod}`);
  if (c.oncommit !== undefined && c.oncommit !== 'ONCOMMIT_NOOP') throw unsupported('ON COMMIT');
}

function checkIndex(i: IndexStmt): void {
  if (i.concurrent) throw unsupported('CREATE INDEX CONCURRENTLY');
  if (i.tableSpace) throw unsupported('tablespaces');
  if (i.excludeOpNames?.length) throw unsupported('index exclusion operators');
  if (i.accessMethod !== undefined && !ALLOWED_INDEX_METHODS.has(i.accessMethod)) throw unsupported(`index method ${i.accessMethod}`);
}

function checkConstraint(path: Path): void {
  const c = path.node as Constraint;
  if (c.indexspace) throw unsupported('tablespaces');
  if (c.access_method !== undefined && !ALLOWED_INDEX_METHODS.has(c.access_method)) throw unsupported(`index method ${c.access_method}`);
  // pgsql-deparser drops `WITH (…)` after PRIMARY KEY / UNIQUE / EXCLUDE: say so instead of failing the round trip.
  if (c.contype !== 'CONSTR_IDENTITY' && c.options?.length) {
    throw unsupported('WITH (…) on a constraint; create the index with CREATE UNIQUE INDEX … WITH (…)');
  }
  // EXCLUDE (elem WITH op, …): each item is a list [IndexElem, operator name].
  for (const item of c.exclusions ?? []) checkOperatorName(list(list(item)?.[1]));
  if (c.old_conpfeqop?.length || c.old_pktable_oid) throw unsupported('internal constraint fields');
}

function checkColumnDef(path: Path): void {
  const c = path.node as ColumnDef;
  if (c.fdwoptions?.length) throw unsupported('column OPTIONS (…) (foreign-data options)');
  if (c.compression !== undefined && !ALLOWED_COMPRESSION.has(c.compression)) throw unsupported(`compression method ${c.compression}`);
  if (c.cooked_default || c.collOid || c.identitySequence) throw unsupported('internal column fields');
}

function checkIndexElem(path: Path): void {
  const e = path.node as IndexElem;
  checkCollationName(e.collation);
  checkOpclassName(e.opclass);
  if (e.opclassopts?.length) throw unsupported('operator class options');
}

/** `ON CONFLICT ON CONSTRAINT name` names a constraint: mapped to its physical name like the other names. */
function checkInfer(path: Path, a: Analysis): void {
  const infer = path.node as InferClause;
  if (infer.conname === undefined) return;
  assertLogicalName(infer.conname, 'constraint');
  a.objectNames.push({ node: infer, field: 'conname', what: 'constraint' });
}

/** `TypeName` is reached by casts, column definitions, ALTER COLUMN TYPE, column lists of functions, XMLSERIALIZE. */
function checkType(path: Path): void {
  // An option value such as `fastupdate = off` parses as a type name; the DefElem rule has checked it is a word.
  if (path.parent?.tag === 'DefElem') return;
  const inColumnDefinition = path.parent?.tag === 'ColumnDef' && path.parent.parent?.tag !== 'RangeFunction';
  checkTypeName(path.node as TypeName, inColumnDefinition);
}

export const RULES: Record<NodeTag, Rule> = {
  // Roots and value nodes. Strings are names or constants; their parent's rule decides what a name may be.
  ParseResult: 'pass',
  RawStmt: 'pass',
  ScanResult: NOT_A_TREE,
  ScanToken: NOT_A_TREE,
  SummaryResult: NOT_A_TREE,
  Table: NOT_A_TREE,
  Function: NOT_A_TREE,
  FilterColumn: NOT_A_TREE,
  Integer: 'pass',
  Float: 'pass',
  Boolean: 'pass',
  String: 'pass',
  BitString: 'pass',
  List: 'pass',
  OidList: INTERNAL,
  IntList: INTERNAL,
  A_Const: 'pass',

  // Statements: the allowed ones (see classify.ts), everything else refused with its name.
  SelectStmt: (path) => {
    const s = path.node as SelectStmt;
    // The deparser drops DISTINCT here and prints WITH TIES as a plain LIMIT: either would change the result.
    if (s.groupDistinct) throw unsupported('GROUP BY DISTINCT');
    if (s.limitOption === 'LIMIT_OPTION_WITH_TIES') throw unsupported('FETCH … WITH TIES (use a window function such as rank())');
  },
  InsertStmt: 'pass',
  UpdateStmt: 'pass',
  DeleteStmt: 'pass',
  CreateStmt: topLevel('CREATE TABLE', checkCreate),
  AlterTableStmt: topLevel('ALTER TABLE'),
  AlterTableCmd: (path) => {
    const subtype = (path.node as AlterTableCmd).subtype;
    if (!subtype || !ALLOWED_ALTER_TABLE.has(subtype)) throw unsupported(`ALTER TABLE action ${String(subtype).replace('AT_', '')}`);
  },
  DropStmt: topLevel('DROP'),
  IndexStmt: topLevel('CREATE INDEX', checkIndex),
  RenameStmt: topLevel('RENAME'),
  TransactionStmt: stmt('transaction statements'),
  MergeStmt: stmt('MERGE (use INSERT … ON CONFLICT)'),
  MergeWhenClause: stmt('MERGE (use INSERT … ON CONFLICT)'),
  MergeAction: INTERNAL,
  MergeSupportFunc: stmt('MERGE (use INSERT … ON CONFLICT)'),
  CreateTableAsStmt: stmt('CREATE TABLE AS / CREATE MATERIALIZED VIEW (use CREATE TABLE and INSERT … SELECT)'),
  SetOperationStmt: INTERNAL,
  ReturnStmt: stmt('RETURN'),
  PLAssignStmt: stmt('PL/pgSQL assignments'),
  CreateSchemaStmt: stmt('CREATE SCHEMA'),
  ATAlterConstraint: stmt('ALTER CONSTRAINT'),
  ReplicaIdentityStmt: stmt('REPLICA IDENTITY'),
  AlterCollationStmt: stmt('ALTER COLLATION'),
  AlterDomainStmt: stmt('ALTER DOMAIN'),
  GrantStmt: stmt('GRANT / REVOKE'),
  ObjectWithArgs: stmt('statements on functions or operators'),
  AccessPriv: stmt('GRANT / REVOKE'),
  GrantRoleStmt: stmt('GRANT / REVOKE of roles'),
  AlterDefaultPrivilegesStmt: stmt('ALTER DEFAULT PRIVILEGES'),
  CopyStmt: stmt('COPY'),
  VariableSetStmt: stmt('SET / RESET'),
  VariableShowStmt: stmt('SHOW'),
  CreateTableSpaceStmt: stmt('CREATE TABLESPACE'),
  DropTableSpaceStmt: stmt('DROP TABLESPACE'),
  AlterTableSpaceOptionsStmt: stmt('ALTER TABLESPACE'),
  AlterTableMoveAllStmt: stmt('ALTER … SET TABLESPACE'),
  CreateExtensionStmt: stmt('CREATE EXTENSION'),
  AlterExtensionStmt: stmt('ALTER EXTENSION'),
  AlterExtensionContentsStmt: stmt('ALTER EXTENSION'),
  CreateFdwStmt: stmt('CREATE FOREIGN DATA WRAPPER'),
  AlterFdwStmt: stmt('ALTER FOREIGN DATA WRAPPER'),
  CreateForeignServerStmt: stmt('CREATE SERVER'),
  AlterForeignServerStmt: stmt('ALTER SERVER'),
  CreateForeignTableStmt: stmt('CREATE FOREIGN TABLE'),
  CreateUserMappingStmt: stmt('CREATE USER MAPPING'),
  AlterUserMappingStmt: stmt('ALTER USER MAPPING'),
  DropUserMappingStmt: stmt('DROP USER MAPPING'),
  ImportForeignSchemaStmt: stmt('IMPORT FOREIGN SCHEMA'),
  CreatePolicyStmt: stmt('CREATE POLICY'),
  AlterPolicyStmt: stmt('ALTER POLICY'),
  CreateAmStmt: stmt('CREATE ACCESS METHOD'),
  CreateTrigStmt: stmt('CREATE TRIGGER'),
  TriggerTransition: stmt('CREATE TRIGGER'),
  CreateEventTrigStmt: stmt('CREATE EVENT TRIGGER'),
  AlterEventTrigStmt: stmt('ALTER EVENT TRIGGER'),
  CreatePLangStmt: stmt('CREATE LANGUAGE'),
  CreateRoleStmt: stmt('CREATE ROLE'),
  AlterRoleStmt: stmt('ALTER ROLE'),
  AlterRoleSetStmt: stmt('ALTER ROLE'),
  DropRoleStmt: stmt('DROP ROLE'),
  RoleSpec: stmt('role names'),
  CreateSeqStmt: stmt('CREATE SEQUENCE'),
  AlterSeqStmt: stmt('ALTER SEQUENCE'),
  DefineStmt: stmt('CREATE AGGREGATE / OPERATOR / TYPE / COLLATION'),
  CreateDomainStmt: stmt('CREATE DOMAIN'),
  CreateOpClassStmt: stmt('CREATE OPERATOR CLASS'),
  CreateOpClassItem: stmt('CREATE OPERATOR CLASS'),
  CreateOpFamilyStmt: stmt('CREATE OPERATOR FAMILY'),
  AlterOpFamilyStmt: stmt('ALTER OPERATOR FAMILY'),
  TruncateStmt: stmt('TRUNCATE (use DELETE)'),
  CommentStmt: stmt('COMMENT'),
  SecLabelStmt: stmt('SECURITY LABEL'),
  DeclareCursorStmt: stmt('cursors'),
  ClosePortalStmt: stmt('cursors'),
  FetchStmt: stmt('cursors'),
  CreateStatsStmt: stmt('CREATE STATISTICS'),
  StatsElem: stmt('CREATE STATISTICS'),
  AlterStatsStmt: stmt('ALTER STATISTICS'),
  CreateFunctionStmt: stmt('CREATE FUNCTION / PROCEDURE'),
  FunctionParameter: stmt('CREATE FUNCTION / PROCEDURE'),
  AlterFunctionStmt: stmt('ALTER FUNCTION'),
  DoStmt: stmt('DO'),
  InlineCodeBlock: stmt('DO'),
  CallStmt: stmt('CALL'),
  CallContext: stmt('CALL'),
  AlterObjectDependsStmt: stmt('ALTER … DEPENDS ON EXTENSION'),
  AlterObjectSchemaStmt: stmt('ALTER … SET SCHEMA'),
  AlterOwnerStmt: stmt('ALTER … OWNER TO'),
  AlterOperatorStmt: stmt('ALTER OPERATOR'),
  AlterTypeStmt: stmt('ALTER TYPE'),
  RuleStmt: stmt('CREATE RULE'),
  NotifyStmt: stmt('NOTIFY'),
  ListenStmt: stmt('LISTEN'),
  UnlistenStmt: stmt('UNLISTEN'),
  CompositeTypeStmt: stmt('CREATE TYPE'),
  CreateEnumStmt: stmt('CREATE TYPE'),
  CreateRangeStmt: stmt('CREATE TYPE'),
  AlterEnumStmt: stmt('ALTER TYPE'),
  ViewStmt: stmt('CREATE VIEW'),
  LoadStmt: stmt('LOAD'),
  CreatedbStmt: stmt('CREATE DATABASE'),
  AlterDatabaseStmt: stmt('ALTER DATABASE'),
  AlterDatabaseRefreshCollStmt: stmt('ALTER DATABASE'),
  AlterDatabaseSetStmt: stmt('ALTER DATABASE'),
  DropdbStmt: stmt('DROP DATABASE'),
  AlterSystemStmt: stmt('ALTER SYSTEM'),
  ClusterStmt: stmt('CLUSTER'),
  VacuumStmt: stmt('VACUUM / ANALYZE'),
  VacuumRelation: stmt('VACUUM / ANALYZE'),
  ExplainStmt: stmt('EXPLAIN'),
  RefreshMatViewStmt: stmt('REFRESH MATERIALIZED VIEW'),
  CheckPointStmt: stmt('CHECKPOINT'),
  DiscardStmt: stmt('DISCARD'),
  LockStmt: stmt('LOCK'),
  ConstraintsSetStmt: stmt('SET CONSTRAINTS'),
  ReindexStmt: stmt('REINDEX'),
  CreateConversionStmt: stmt('CREATE CONVERSION'),
  CreateCastStmt: stmt('CREATE CAST'),
  CreateTransformStmt: stmt('CREATE TRANSFORM'),
  PrepareStmt: stmt('PREPARE'),
  ExecuteStmt: stmt('EXECUTE'),
  DeallocateStmt: stmt('DEALLOCATE'),
  DropOwnedStmt: stmt('DROP OWNED'),
  ReassignOwnedStmt: stmt('REASSIGN OWNED'),
  AlterTSDictionaryStmt: stmt('ALTER TEXT SEARCH DICTIONARY'),
  AlterTSConfigurationStmt: stmt('ALTER TEXT SEARCH CONFIGURATION'),
  PublicationTable: stmt('publications'),
  PublicationObjSpec: stmt('publications'),
  CreatePublicationStmt: stmt('CREATE PUBLICATION'),
  AlterPublicationStmt: stmt('ALTER PUBLICATION'),
  CreateSubscriptionStmt: stmt('CREATE SUBSCRIPTION'),
  AlterSubscriptionStmt: stmt('ALTER SUBSCRIPTION'),
  DropSubscriptionStmt: stmt('DROP SUBSCRIPTION'),

  // Clauses of queries.
  RangeVar: checkRangeVar,
  Alias: 'pass',
  ResTarget: 'pass',
  MultiAssignRef: 'pass', // UPDATE … SET (a, b) = (…)
  ColumnRef: 'pass', // columns resolve against the FROM list, whose tables are all checked
  A_Star: 'pass',
  A_Indices: 'pass',
  A_Indirection: 'pass',
  JoinExpr: 'pass',
  RangeSubselect: 'pass',
  RangeFunction: 'pass', // its functions are FuncCalls, checked against the allow-list
  RangeTableFunc: { refuse: 'XMLTABLE' },
  RangeTableFuncCol: { refuse: 'XMLTABLE' },
  RangeTableSample: { refuse: 'TABLESAMPLE' },
  WithClause: 'pass',
  CommonTableExpr: 'pass',
  CTESearchClause: 'pass', // WITH RECURSIVE … SEARCH (PostgreSQL 14+); names only columns
  CTECycleClause: 'pass', // WITH RECURSIVE … CYCLE (PostgreSQL 14+); its mark values are checked expressions
  SortBy: (path) => checkOperatorName((path.node as SortBy).useOp), // ORDER BY … USING op
  WindowDef: 'pass',
  GroupingSet: 'pass', // ROLLUP, CUBE, GROUPING SETS
  OnConflictClause: 'pass',
  InferClause: checkInfer,
  ReturningClause: 'pass',
  ReturningOption: { refuse: 'RETURNING WITH (OLD / NEW AS …) (not available on PostgreSQL 15)' },
  IntoClause: { refuse: 'SELECT INTO (use CREATE TABLE and INSERT … SELECT)' },
  LockingClause: { refuse: 'row locking clauses (FOR UPDATE / FOR SHARE)' },

  // Expressions.
  A_Expr: (path) => checkOperatorName((path.node as A_Expr).name), // also ANY/ALL, NULLIF, IN, LIKE, BETWEEN, …
  SubLink: (path) => checkOperatorName((path.node as SubLink).operName), // x op ANY (SELECT …)
  FuncCall: (path, a) => {
    const call = path.node as FuncCall;
    checkFunctionName(call.funcname);
    // Ours, in user_data (PostgreSQL < 18 has none): qualified by the rewriter, since sessions search pg_catalog only.
    if (call.funcname?.length === 1 && (call.funcname[0] as { String?: { sval?: string } }).String?.sval === 'uuidv7') a.serviceCalls.push(call);
  },
  NamedArgExpr: 'pass', // f(a => 1): the function itself is checked
  TypeCast: 'pass', // its TypeName is checked
  TypeName: checkType,
  CollateClause: (path) => checkCollationName((path.node as { collname?: Node[] }).collname),
  SQLValueFunction: (path) => {
    const op = (path.node as SQLValueFunction).op;
    if (!op || !ALLOWED_VALUE_FUNCTIONS.has(op)) throw unsupported(`${String(op).replace('SVFOP_', '')} is not available`);
  },
  ParamRef: { refuse: 'parameters ($1): send literal values' },
  BoolExpr: 'pass',
  NullTest: 'pass',
  BooleanTest: 'pass',
  CaseExpr: 'pass',
  CaseWhen: 'pass',
  CoalesceExpr: 'pass',
  MinMaxExpr: 'pass', // GREATEST, LEAST
  RowExpr: 'pass',
  A_ArrayExpr: 'pass',
  GroupingFunc: 'pass', // GROUPING(a)
  SetToDefault: 'pass', // DEFAULT in VALUES / SET
  // XML constructors (XMLELEMENT, XMLPARSE, XMLSERIALIZE, IS DOCUMENT, …) touch no catalog or file; the XML
  // functions that do (table_to_xml, query_to_xml, xpath, …) are not in the function allow-list.
  XmlExpr: 'pass',
  XmlSerialize: 'pass',
  CurrentOfExpr: { refuse: 'WHERE CURRENT OF (cursors are not available)' },

  // DDL parts.
  ColumnDef: checkColumnDef,
  Constraint: checkConstraint,
  IndexElem: checkIndexElem,
  DefElem: (path) => checkOption(path),
  // pgsql-deparser prints LIKE's table as nothing at all; the round trip would refuse it anyway, say why here.
  TableLikeClause: { refuse: 'CREATE TABLE … (LIKE …): list the columns instead' },
  PartitionElem: PARTITIONS,
  PartitionSpec: PARTITIONS,
  PartitionBoundSpec: PARTITIONS,
  PartitionRangeDatum: PARTITIONS,
  PartitionCmd: PARTITIONS,

  // SQL/JSON, see above.
  JsonFormat: SQL_JSON,
  JsonReturning: SQL_JSON,
  JsonValueExpr: SQL_JSON,
  JsonConstructorExpr: SQL_JSON,
  JsonIsPredicate: SQL_JSON,
  JsonBehavior: SQL_JSON,
  JsonExpr: SQL_JSON,
  JsonTablePath: SQL_JSON,
  JsonTablePathScan: SQL_JSON,
  JsonTableSiblingJoin: SQL_JSON,
  JsonOutput: SQL_JSON,
  JsonArgument: SQL_JSON,
  JsonFuncExpr: SQL_JSON,
  JsonTablePathSpec: SQL_JSON,
  JsonTable: SQL_JSON,
  JsonTableColumn: SQL_JSON,
  JsonKeyValue: SQL_JSON,
  JsonParseExpr: SQL_JSON,
  JsonScalarExpr: SQL_JSON,
  JsonSerializeExpr: SQL_JSON,
  JsonObjectConstructor: SQL_JSON,
  JsonArrayConstructor: SQL_JSON,
  JsonArrayQueryConstructor: SQL_JSON,
  JsonAggConstructor: SQL_JSON,
  JsonObjectAgg: SQL_JSON,
  JsonArrayAgg: SQL_JSON,

  // Parse analysis and planner nodes, see above.
  TableFunc: INTERNAL,
  Var: INTERNAL,
  Param: INTERNAL,
  Aggref: INTERNAL,
  WindowFunc: INTERNAL,
  WindowFuncRunCondition: INTERNAL,
  SubscriptingRef: INTERNAL,
  FuncExpr: INTERNAL,
  OpExpr: INTERNAL,
  DistinctExpr: INTERNAL,
  NullIfExpr: INTERNAL,
  ScalarArrayOpExpr: INTERNAL,
  SubPlan: INTERNAL,
  AlternativeSubPlan: INTERNAL,
  FieldSelect: INTERNAL,
  FieldStore: INTERNAL,
  RelabelType: INTERNAL,
  CoerceViaIO: INTERNAL,
  ArrayCoerceExpr: INTERNAL,
  ConvertRowtypeExpr: INTERNAL,
  CollateExpr: INTERNAL,
  CaseTestExpr: INTERNAL,
  ArrayExpr: INTERNAL,
  RowCompareExpr: INTERNAL,
  CoerceToDomain: INTERNAL,
  CoerceToDomainValue: INTERNAL,
  NextValueExpr: INTERNAL,
  InferenceElem: INTERNAL,
  ReturningExpr: INTERNAL,
  TargetEntry: INTERNAL,
  RangeTblRef: INTERNAL,
  FromExpr: INTERNAL,
  OnConflictExpr: INTERNAL,
  Query: INTERNAL,
  RangeTblEntry: INTERNAL,
  RTEPermissionInfo: INTERNAL,
  RangeTblFunction: INTERNAL,
  TableSampleClause: INTERNAL,
  WithCheckOption: INTERNAL,
  SortGroupClause: INTERNAL,
  WindowClause: INTERNAL,
  RowMarkClause: INTERNAL,
};

/** Applies the rule of one node; a tag missing from the table (a parser newer than the types) is refused. */
export function applyRule(path: Path, a: Analysis): void {
  const rule: Rule | undefined = Object.hasOwn(RULES, path.tag) ? RULES[path.tag] : undefined;
  if (rule === undefined) throw unsupported(`${path.tag} nodes`);
  if (rule === 'pass') return;
  if (typeof rule === 'function') rule(path, a);
  else throw unsupported(rule.refuse);
}
