import { CONDITION_JSON_SCHEMA } from '@wds/policy-engine';
import { PolicyView } from '@wds/policies';
import { SqlProposalView } from '@wds/sql-approval';
import { WorkflowRunSummaryView } from '@wds/workflows';
import * as v from 'valibot';
import { withJsonSchema } from '../schemas.js';
import { JsonObject, NonNegative, RuntimeName, StatementKind, Uuid } from './common.js';

/**
 * The views of the core operations: workspaces, SQL, policies, STFs, files, documents, workflows, effects, members.
 * A package that owns a resource owns its view (a valibot schema and the type inferred from it); it is re-exported
 * here under the name the OpenAPI document gives it, in the order the document lists them.
 */
export { WorkspaceView as Workspace } from '@wds/workspaces';
export { PublicUser as User } from '@wds/identity';
export { WorkspaceWithRoleView as WorkspaceWithRole } from '@wds/workspaces';

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

const PolicyMode = v.picklist(['allow', 'deny']);
const Decision = v.picklist(['allow', 'deny', 'default_deny']);
const PolicyOperation = v.picklist(['select', 'insert', 'update', 'delete']);
/** Which policy an explanation names. */
const policyRef = { id: Uuid, name: v.string(), policy_group_id: Uuid, mode: PolicyMode };

/** explain_sql with row_id: one row the caller can read, checked against each select policy of the user explained. */
export const SqlRowExplanation = v.object({
  table: v.string(),
  user_id: Uuid,
  decision: Decision,
  visible: v.boolean(),
  policies: v.array(
    v.object({
      ...policyRef,
      matches: v.boolean(),
      conditions: v.array(v.object({ column: v.string(), condition: JsonObject, matches: v.boolean() })),
    }),
  ),
});

/** explain_sql: why a statement runs as it does for a user, or is denied (docs/sql-and-policies.md#explain). */
export const SqlExplanation = v.object({
  user_id: Uuid,
  operation: StatementKind,
  ddl_allowed: v.nullable(v.boolean()),
  access: v.array(
    v.object({
      table: v.string(),
      operation: PolicyOperation,
      decision: Decision,
      policies: v.array(
        v.object({
          ...policyRef,
          condition: v.nullable(JsonObject),
          predicate: v.nullable(v.string()),
        }),
      ),
      denied_by: v.nullable(v.string()),
      predicate: v.nullable(v.string()),
      denial: v.nullable(v.string()),
    }),
  ),
  transformed_sql: v.nullable(v.string()),
  denied: v.nullable(v.string()),
  row: v.optional(SqlRowExplanation),
});

export { SqlProposalView as SqlProposal } from '@wds/sql-approval';

/** execute_sql where approval applies (docs/approvals.md): 202, nothing ran, the statement waits as this proposal. */
export const SqlApprovalRequired = v.object({
  code: v.literal('APPROVAL_REQUIRED'),
  message: v.string(),
  proposal: SqlProposalView,
});

/** approve_sql_proposal: what execute answered for the statement, and the proposal as it ended. */
export const SqlApproved = v.union([
  v.object({ rows: SqlRows, executed_sql: v.string(), proposal: SqlProposalView }),
  v.object({ affected_rows: NonNegative, executed_sql: v.string(), rows: v.optional(SqlRows), proposal: SqlProposalView }),
]);

export { PolicyGroupView as PolicyGroup } from '@wds/policies';

/** A policy (@wds/policies PolicyView), its condition stated as the JSON Schema of the condition language. */
export const Policy = v.object({
  ...PolicyView.entries,
  /** The condition in its normal form (every column an object of operators), or null. */
  condition: withJsonSchema(v.unknown(), { anyOf: [CONDITION_JSON_SCHEMA, { type: 'null' }] }),
});

export { StfVersionView as StfVersion, StfView as Stf, StfCreatedView as StfCreated } from '@wds/stfs';

/** A library STF code of the javascript runtime may import by name (list_stf_libraries). */
export const StfLibrary = v.object({
  /** The bare package name; importable by it or by an alias. */
  name: v.string(),
  /** The other names it can be imported by (`@d6e-ai/<name>`). */
  aliases: v.array(v.string()),
  version: v.string(),
  description: v.string(),
  /** SPDX licence of what is bundled. */
  license: v.string(),
});

const LogLine = v.object({ level: v.picklist(['log', 'info', 'warn', 'error', 'debug']), message: v.string() });
/**
 * instant_run_stf (docs/stfs.md#instant-run): a failure of the code is an answer too (`success: false`, still a 200).
 */
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

export { FileView as File } from '@wds/storage';
export { DocumentSummary, DocumentView as Document, DocumentVersionView as DocumentVersion } from '@wds/documents';

/** extract_file_text: a page of a file's text, counted in Unicode characters. */
export const FileText = v.object({
  file_id: Uuid,
  filename: v.string(),
  content_type: v.string(),
  /** Characters `offset` to `offset + limit` of the whole text. */
  text: v.string(),
  offset: NonNegative,
  total_chars: NonNegative,
  /** Where the next page starts; null at the end. */
  next_offset: v.nullable(NonNegative),
});

export {
  WorkflowView as Workflow,
  WorkflowRunSummaryView as WorkflowRunSummary,
  WorkflowScheduleView as WorkflowSchedule,
  WorkflowHookView as WorkflowHook,
  WorkflowHookWithSecret,
} from '@wds/workflows';
/** deliver_workflow_hook (202): the run queued for the delivery, or the first one's for a redelivery. */
export const HookDelivered = v.object({
  run_id: Uuid,
  /** `queued` for a new delivery; for a duplicate, where the first delivery's run is now. */
  status: WorkflowRunSummaryView.entries.status,
  duplicate: v.boolean(),
});

export { WorkflowTriggerView as WorkflowTrigger, WorkflowEventView as WorkflowEvent } from '@wds/workflows';

/** execute_workflow without waiting (202): the queued run. */
export const WorkflowRunQueued = v.object({ run_id: Uuid, workflow_id: Uuid, status: v.literal('queued') });
export { WorkflowRunView as WorkflowRun } from '@wds/workflows';

export { EffectVersionView as EffectVersion, EffectView as Effect, EffectCreatedView as EffectCreated } from '@wds/effects';

export { MemberView as Member, InvitationView as Invitation, MemberAddedView as MemberAdded, RedirectUriView as RedirectUri } from '@wds/workspaces';

export { ApiKeyMetadata as ApiKey, ApiKeyCreated, LoginSession, SignInMethods } from '@wds/identity';

export { PinnedChartView as PinnedChart } from '@wds/charts';

export { SecretKeyView as StfSecretKey } from '@wds/stfs';

const DescribeHead = {
  stf_id: Uuid,
  stf_version_id: Uuid,
  version: v.string(),
  runtime: RuntimeName,
  input_schema: v.unknown(),
  output_schema: v.unknown(),
};
/**
 * describe_stf (@wds/stf-runner StfDescription): the stored schemas (`stored`), what the code answered to
 * `{ operation: 'describe' }` (`run`), or nothing known (`none`, with the code's failure when it failed).
 */
export const StfDescription = v.variant('source', [
  v.object({ ...DescribeHead, source: v.literal('stored') }),
  v.object({ ...DescribeHead, source: v.literal('run'), description: v.optional(v.string()), operations: v.optional(v.unknown()) }),
  v.object({
    ...DescribeHead,
    source: v.literal('none'),
    error: v.optional(v.object({ kind: v.string(), message: v.string(), details: v.optional(v.string()) })),
  }),
]);
