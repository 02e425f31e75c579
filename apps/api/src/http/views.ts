import * as v from 'valibot';
import { Role, Uuid } from './schemas.js';

/**
 * The success bodies of operations (RouteDef.response): what the handlers answer, as valibot schemas. The OpenAPI
 * document states each named one (VIEWS) once as a component and refers to it; the test harness validates real
 * answers against them (test/support.ts). Derived from the packages' view types (toWorkspaceView, PolicyView, …):
 * objects are open (a field added later is no break), every field a handler always sends is required.
 */

const Timestamp = v.pipe(v.string(), v.isoTimestamp());
const Integer = v.pipe(v.number(), v.integer());
const NonNegative = v.pipe(v.number(), v.integer(), v.minValue(0));
const JsonObject = v.record(v.string(), v.unknown());
const RuntimeName = v.picklist(['javascript', 'docker', 'wasm']);
const StatementKind = v.picklist(['select', 'insert', 'update', 'delete', 'ddl']);

export const Workspace = v.object({
  id: Uuid,
  name: v.string(),
  ddl_policy_group_id: v.nullable(Uuid),
  workflow_editor_policy_group_id: v.nullable(Uuid),
  policy_editor_policy_group_id: v.nullable(Uuid),
  mcp_timeout_ms: Integer,
  custom_prompt: v.string(),
  auto_embed_files: v.boolean(),
  auto_embed_tables: v.boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** A workspace as its member sees it: with the caller's role. */
export const WorkspaceWithRole = v.object({ ...Workspace.entries, role: Role });

const SqlRows = v.array(JsonObject);
/** execute_sql: rows of a read, or the count of a write (with the rows of its RETURNING). */
export const SqlResult = v.union([
  v.object({ rows: SqlRows, executed_sql: v.string() }),
  v.object({ affected_rows: NonNegative, executed_sql: v.string(), rows: v.optional(SqlRows) }),
]);

export const SqlPreview = v.object({
  proposal_id: Uuid,
  original_sql: v.string(),
  transformed_sql: v.string(),
  operation: StatementKind,
  affected_tables: v.array(v.string()),
  requires_approval: v.boolean(),
  /** With `with_policies`: the SQL as it would run for the caller, or null with policy_denied. */
  policy_sql: v.optional(v.nullable(v.string())),
  policy_denied: v.optional(v.string()),
});

export const PolicyGroup = v.object({
  id: Uuid,
  workspace_id: Uuid,
  name: v.string(),
  user_ids: v.array(Uuid),
  stf_ids: v.array(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const Policy = v.object({
  id: Uuid,
  workspace_id: Uuid,
  name: v.string(),
  policy_group_id: Uuid,
  mode: v.picklist(['allow', 'deny']),
  table_name: v.string(),
  operation: v.picklist(['select', 'insert', 'update', 'delete']),
  /** The condition as stored, or null. */
  condition: v.unknown(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const StfVersion = v.object({
  id: Uuid,
  stf_id: Uuid,
  version: v.string(),
  runtime: RuntimeName,
  /** Base64, as uploaded. */
  code: v.string(),
  input_schema: v.unknown(),
  output_schema: v.unknown(),
  created_at: Timestamp,
});

export const Stf = v.object({
  id: Uuid,
  workspace_id: Uuid,
  name: v.string(),
  description: v.nullable(v.string()),
  is_public: v.boolean(),
  latest_version: v.nullable(v.object({ id: Uuid, version: v.string(), runtime: RuntimeName })),
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** create_stf: the STF with its first version. */
export const StfCreated = v.object({ ...Stf.entries, version: StfVersion });

const LogLine = v.object({ level: v.picklist(['log', 'info', 'warn', 'error', 'debug']), message: v.string() });
/** instant_run_stf (DECISIONS §6): a failure of the code is an answer too (`success: false`, still a 200). */
export const RunAnswer = v.variant('success', [
  v.object({ success: v.literal(true), output: v.unknown(), logs: v.array(LogLine), duration_ms: v.number() }),
  v.object({
    success: v.literal(false),
    error: v.object({
      // @wds/stf-runner types it as a string; what runtimes raise today (StfFailureKind): syntax, runtime, timeout,
      // memory, stack, output_too_large, invalid_output, invalid_module.
      kind: v.string(),
      message: v.string(),
      details: v.optional(v.string()),
    }),
    logs: v.array(LogLine),
  }),
]);

export const File = v.object({
  id: Uuid,
  workspace_id: Uuid,
  filename: v.string(),
  content_type: v.string(),
  size: NonNegative,
  sha256: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)),
  metadata: JsonObject,
  created_at: Timestamp,
});

/** A document as listed: everything but its content. */
export const DocumentSummary = v.object({
  id: Uuid,
  workspace_id: Uuid,
  title: v.string(),
  doc_type: v.string(),
  status: v.string(),
  metadata: JsonObject,
  version: v.pipe(v.number(), v.integer(), v.minValue(1)),
  created_by: v.nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const Document = v.object({ ...DocumentSummary.entries, content: v.string() });

/** The named views: each a component of the OpenAPI document (#/components/schemas/<name>). */
export const VIEWS: Record<string, v.GenericSchema> = {
  Workspace,
  WorkspaceWithRole,
  SqlResult,
  SqlPreview,
  PolicyGroup,
  Policy,
  Stf,
  StfCreated,
  StfVersion,
  RunAnswer,
  File,
  DocumentSummary,
  Document,
};
