import { FieldMappingView } from '@wds/effect-runner';
import { CONDITION_JSON_SCHEMA } from '@wds/policy-engine';
import { PolicyView } from '@wds/policies';
import * as v from 'valibot';
import { withJsonSchema } from '../schemas.js';
import { Integer, JsonObject, NonNegative, RuntimeName, StatementKind, Timestamp, Uuid } from './common.js';

/**
 * The views of the core operations: workspaces, SQL, policies, STFs, files, documents, workflows, effects, members.
 * A package that owns a resource owns its view (a valibot schema and the type inferred from it); it is re-exported
 * here under the name the OpenAPI document gives it.
 */
export { PinnedChartView as PinnedChart } from '@wds/charts';
export { DocumentSummary, DocumentVersionView as DocumentVersion, DocumentView as Document } from '@wds/documents';
export { EffectCreatedView as EffectCreated, EffectVersionView as EffectVersion, EffectView as Effect } from '@wds/effects';
export { ApiKeyCreated, ApiKeyMetadata as ApiKey, PublicUser as User } from '@wds/identity';
export { PolicyGroupView as PolicyGroup } from '@wds/policies';
export { SecretKeyView as StfSecretKey, StfCreatedView as StfCreated, StfVersionView as StfVersion, StfView as Stf } from '@wds/stfs';
export { FileView as File } from '@wds/storage';
export {
  InvitationView as Invitation,
  MemberAddedView as MemberAdded,
  MemberView as Member,
  RedirectUriView as RedirectUri,
  WorkspaceView as Workspace,
  WorkspaceWithRoleView as WorkspaceWithRole,
} from '@wds/workspaces';

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


/** A policy (@wds/policies PolicyView), its condition stated as the JSON Schema of the condition language. */
export const Policy = v.object({
  ...PolicyView.entries,
  /** The condition in its normal form (every column an object of operators), or null. */
  condition: withJsonSchema(v.unknown(), { anyOf: [CONDITION_JSON_SCHEMA, { type: 'null' }] }),
});



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


const Mappings = v.array(FieldMappingView);

const InputSource = v.variant('type', [
  v.object({ type: v.literal('Library'), name: v.string() }),
  v.object({ type: v.literal('Table'), name: v.string() }),
  v.object({ type: v.literal('File'), id: Uuid }),
  v.object({
    type: v.literal('Fetch'),
    url: v.string(),
    method: v.optional(v.string()),
    headers: v.optional(v.record(v.string(), v.string())),
    body: v.optional(v.unknown()),
    timeout_secs: v.optional(v.number()),
  }),
]);

/** A workflow with its definition (@wds/workflows WorkflowView); `pin_version` is stored with its default. */
export const Workflow = v.object({
  id: Uuid,
  workspace_id: Uuid,
  name: v.string(),
  description: v.nullable(v.string()),
  allow_anonymous_execute: v.boolean(),
  input_schema: v.nullable(JsonObject),
  input_steps: v.array(v.object({ name: v.string(), source: InputSource })),
  stf_steps: v.array(v.object({ stf_version_id: Uuid, pin_version: v.boolean(), input_mappings: Mappings })),
  effect_steps: v.array(v.object({ effect_version_id: Uuid, pin_version: v.boolean(), input_mappings: Mappings })),
  /**
   * What its schedules, hooks and triggers run of each unpinned step: the version that was newest when it was last
   * saved (referenced version id → version id); null: each step at the version it names.
   */
  accepted_versions: v.nullable(v.object({ stf: v.record(v.string(), Uuid), effect: v.record(v.string(), Uuid) })),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const StepError = v.object({ kind: v.string(), message: v.string(), details: v.optional(v.string()) });
/** One step of a run (@wds/workflows StepRecord): which STF or effect version ran, how it ended, its deprecations. */
const StepRecord = v.object({
  kind: v.picklist(['input', 'stf', 'effect']),
  index: NonNegative,
  name: v.optional(v.string()),
  stf_id: v.optional(Uuid),
  stf_version_id: v.optional(Uuid),
  effect_id: v.optional(Uuid),
  effect_version_id: v.optional(Uuid),
  version: v.optional(v.string()),
  status: v.picklist(['succeeded', 'failed', 'skipped']),
  duration_ms: v.optional(v.number()),
  error: v.optional(StepError),
  status_code: v.optional(Integer),
  attempts: v.optional(NonNegative),
  /**
   * Effects: the Idempotency-Key the call carried — derived from what the run is the delivery of (the event, the
   * schedule's tick, the hook delivery, the run asked for by hand) and the step, so every retry of the same delivery
   * carries the same — and whether the endpoint answered 2xx (a resumed run does not call it again).
   */
  idempotency_key: v.optional(v.string()),
  delivered: v.optional(v.boolean()),
  /** In a run resumed after a crash: the attempt of the run that ran this step (an earlier one's was not run again). */
  attempt: v.optional(NonNegative),
  /** What the step's definition wrote in an older form that still works, and what to write instead. */
  deprecations: v.optional(v.array(v.object({ at: v.string(), found: v.string(), use: v.string() }))),
  /** An input step that read a table with the policies of the user the run ran as: the run is whole only for them. */
  caller_rows: v.optional(v.literal(true)),
});
/** A run as listed: without its input and output. `error.step` names the failed step (`run` when interrupted or cancelled). */
export const WorkflowRunSummary = v.object({
  id: Uuid,
  workflow_id: Uuid,
  status: v.picklist(['queued', 'running', 'succeeded', 'failed', 'cancelled']),
  /** What started it: a request that waited for it, an async request, a schedule, a webhook, an event. */
  trigger: v.picklist(['request', 'async', 'schedule', 'webhook', 'event']),
  /** The schedule, hook or event trigger that started it. */
  trigger_id: v.nullable(Uuid),
  executed_by: v.nullable(Uuid),
  /** When it was queued; null for a run that started at once. */
  queued_at: v.nullable(Timestamp),
  /** When a cancel was asked while it ran. */
  cancel_requested_at: v.nullable(Timestamp),
  /**
   * How many times a process took it up: 0 queued, 1 started; more when a queued run was resumed after its process
   * died (at most RUN_MAX_ATTEMPTS; the steps it had finished were not run again).
   */
  attempts: NonNegative,
  error: v.nullable(v.object({ ...StepError.entries, step: v.string() })),
  steps: v.array(StepRecord),
  started_at: Timestamp,
  finished_at: v.nullable(Timestamp),
  duration_ms: v.nullable(v.number()),
});
/** A cron schedule of a workflow: it runs the workflow as its creator with `input` at each tick. */
export const WorkflowSchedule = v.object({
  id: Uuid,
  workspace_id: Uuid,
  workflow_id: Uuid,
  name: v.string(),
  /** Five fields (minute hour day month weekday), or six with seconds first. */
  cron: v.string(),
  /** An IANA time zone. */
  timezone: v.string(),
  input: v.unknown(),
  paused: v.boolean(),
  /** Who it runs as. */
  created_by: Uuid,
  /** The next tick it fires at; null while paused. */
  next_run_at: v.nullable(Timestamp),
  /** The tick it last fired at, and that run. */
  last_run_at: v.nullable(Timestamp),
  last_run_id: v.nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** An inbound webhook of a workflow: senders post to `path` on this service; it runs as its creator. */
export const WorkflowHook = v.object({
  id: Uuid,
  workspace_id: Uuid,
  workflow_id: Uuid,
  name: v.string(),
  /** `/api/v1/hooks/<id>`: needs no credential, only a signature made with the secret. */
  path: v.string(),
  paused: v.boolean(),
  created_by: Uuid,
  secret_rotated_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** create_workflow_hook, rotate_workflow_hook_secret: the hook with its signing secret, answered this once. */
export const WorkflowHookWithSecret = v.object({ ...WorkflowHook.entries, secret: v.string() });
/** deliver_workflow_hook (202): the run queued for the delivery, or the first one's for a redelivery. */
export const HookDelivered = v.object({
  run_id: Uuid,
  /** `queued` for a new delivery; for a duplicate, where the first delivery's run is now. */
  status: v.picklist(['queued', 'running', 'succeeded', 'failed', 'cancelled']),
  duplicate: v.boolean(),
});

/** An event trigger of a workflow: it runs the workflow, as its creator, with each event as `$input`. */
export const WorkflowTrigger = v.object({
  id: Uuid,
  workspace_id: Uuid,
  workflow_id: Uuid,
  name: v.string(),
  event: v.picklist(['file_uploaded', 'document_changed', 'row_inserted', 'row_updated', 'row_deleted']),
  /** Row events: the table. */
  table_name: v.nullable(v.string()),
  paused: v.boolean(),
  created_by: Uuid,
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** One event of a trigger and its delivery: pending → running → succeeded, or retried, or dead (replayable). */
export const WorkflowEvent = v.object({
  id: Uuid,
  trigger_id: Uuid,
  workflow_id: Uuid,
  /** The run's `$input`: `{ type, workspace_id, occurred_at, … }`. */
  event: JsonObject,
  status: v.picklist(['pending', 'running', 'succeeded', 'dead']),
  attempts: NonNegative,
  next_attempt_at: Timestamp,
  run_id: v.nullable(Uuid),
  /** Why the latest attempt failed (the run's error, or the loop guard); null otherwise. */
  last_error: v.unknown(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** execute_workflow without waiting (202): the queued run. */
export const WorkflowRunQueued = v.object({ run_id: Uuid, workflow_id: Uuid, status: v.literal('queued') });
/** One run with its input and output (any JSON; null when there is none). */
export const WorkflowRun = v.object({ ...WorkflowRunSummary.entries, input: v.unknown(), output: v.unknown() });






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
