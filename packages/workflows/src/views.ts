import { type WorkflowRunStatus, type WorkflowRunTrigger, type WorkflowTriggerEvent, field } from '@wds/db';
import { FieldMappingView } from '@wds/effect-runner';
import * as v from 'valibot';
import type { WorkflowDefinition } from './definition.js';
import type { StepStatus } from './engine.js';

/**
 * The views of workflows, their runs, schedules, hooks, triggers and events: what the API answers (apps/api
 * re-exports them). A definition is answered as it was saved; its shape is checked on the way in (definition.ts).
 */

const Mappings = v.array(FieldMappingView);

const InputSourceView = v.variant('type', [
  v.object({ type: v.literal('Library'), name: v.string() }),
  v.object({ type: v.literal('Table'), name: v.string() }),
  v.object({ type: v.literal('File'), id: field.Uuid }),
  v.object({
    type: v.literal('Fetch'),
    url: v.string(),
    method: v.optional(v.string()),
    headers: v.optional(v.record(v.string(), v.string())),
    body: v.optional(v.unknown()),
    timeout_secs: v.optional(v.number()),
  }),
]);

const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const satisfies readonly WorkflowRunStatus[];

/** A workflow with its definition; `pin_version` is stored with its default. */
export const WorkflowView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  name: v.string(),
  description: v.nullable(v.string()),
  allow_anonymous_execute: v.boolean(),
  input_schema: v.nullable(field.JsonObject),
  input_steps: v.array(v.object({ name: v.string(), source: InputSourceView })),
  stf_steps: v.array(v.object({ stf_version_id: field.Uuid, pin_version: v.boolean(), input_mappings: Mappings })),
  effect_steps: v.array(v.object({ effect_version_id: field.Uuid, pin_version: v.boolean(), input_mappings: Mappings })),
  /**
   * What its schedules, hooks and triggers run of each unpinned step: the version that was newest when it was last
   * saved (referenced version id → version id, accepted.ts); null: each step at the version it names.
   */
  accepted_versions: v.nullable(v.object({ stf: v.record(v.string(), field.Uuid), effect: v.record(v.string(), field.Uuid) })),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
/** The view, with its definition typed as the definition's schemas type it (what is saved is what was checked). */
export type WorkflowView = Omit<v.InferOutput<typeof WorkflowView>, keyof WorkflowDefinition> & WorkflowDefinition;

const StepErrorView = v.object({ kind: v.string(), message: v.string(), details: v.optional(v.string()) });

/** One step of a run: which STF or effect version ran, how it ended, its deprecations. */
export const StepRecordView = v.object({
  kind: v.picklist(['input', 'stf', 'effect']),
  index: field.NonNegative,
  name: v.optional(v.string()),
  stf_id: v.optional(field.Uuid),
  stf_version_id: v.optional(field.Uuid),
  effect_id: v.optional(field.Uuid),
  effect_version_id: v.optional(field.Uuid),
  version: v.optional(v.string()),
  status: v.picklist(['succeeded', 'failed', 'skipped'] as const satisfies readonly StepStatus[]),
  duration_ms: v.optional(v.number()),
  error: v.optional(StepErrorView),
  /** Effects: the response's HTTP status, and how many attempts were made. */
  status_code: v.optional(field.Integer),
  attempts: v.optional(field.NonNegative),
  /**
   * Effects: the Idempotency-Key the call carried — derived from what the run is the delivery of (the event, the
   * schedule's tick, the hook delivery, the run asked for by hand) and the step, so every retry of the same delivery
   * carries the same (keys.ts) — and whether the endpoint answered 2xx (a resumed run does not call it again).
   */
  idempotency_key: v.optional(v.string()),
  delivered: v.optional(v.boolean()),
  /** In a run resumed after a crash: the attempt of the run that ran this step (an earlier one's was not run again). */
  attempt: v.optional(field.NonNegative),
  /** What the step's definition wrote in an older form that still works, and what to write instead. */
  deprecations: v.optional(v.array(v.object({ at: v.string(), found: v.string(), use: v.string() }))),
  /** An input step that read a table with the policies of the user the run ran as: the run is whole only for them. */
  caller_rows: v.optional(v.literal(true)),
});

/** A run as listed: without its input and output. `error.step` names the failed step (`run` when interrupted or cancelled). */
export const WorkflowRunSummaryView = v.object({
  id: field.Uuid,
  workflow_id: field.Uuid,
  status: v.picklist(RUN_STATUSES),
  /** What started it: a request that waited for it, an async request, a schedule, a webhook, an event. */
  trigger: v.picklist(['request', 'async', 'schedule', 'webhook', 'event'] as const satisfies readonly WorkflowRunTrigger[]),
  /** The schedule, hook or event trigger that started it. */
  trigger_id: v.nullable(field.Uuid),
  executed_by: v.nullable(field.Uuid),
  /** When it was queued; null for a run that started at once. */
  queued_at: v.nullable(field.Timestamp),
  /** When a cancel was asked while it ran. */
  cancel_requested_at: v.nullable(field.Timestamp),
  /**
   * How many times a process took it up: 0 queued, 1 started; more when a queued run was resumed after its process
   * died (at most RUN_MAX_ATTEMPTS; the steps it had finished were not run again).
   */
  attempts: field.NonNegative,
  /** The run this one ran again (`POST …/runs/{runId}/rerun`), with the same `$input`; null otherwise. */
  rerun_of: v.nullable(field.Uuid),
  error: v.nullable(v.object({ ...StepErrorView.entries, step: v.string() })),
  steps: v.array(StepRecordView),
  started_at: field.Timestamp,
  finished_at: v.nullable(field.Timestamp),
  duration_ms: v.nullable(v.number()),
});
export type WorkflowRunSummaryView = v.InferOutput<typeof WorkflowRunSummaryView>;

/**
 * One step of a run as the run view answers it: its record with what the step was given and what it made (any JSON,
 * secrets masked). A value over WORKFLOW_STEP_DATA_MAX_BYTES is `{ truncated: true, bytes, preview }`; null when
 * nothing was kept (a skipped step, an output a failed step did not make, a run before step data) or for a reader
 * other than the user a run made of their rows ran as.
 */
export const StepRecordWithDataView = v.object({
  ...StepRecordView.entries,
  /** An input step's source, an STF step's input, an effect step's request (credentials `[redacted]`). */
  input: v.unknown(),
  /** An input step's value, an STF step's output, an effect step's `{ status, body }` answer. */
  output: v.unknown(),
});

/** One run with its input and output (any JSON; null when there is none), and each step's. */
export const WorkflowRunView = v.object({ ...WorkflowRunSummaryView.entries, steps: v.array(StepRecordWithDataView), input: v.unknown(), output: v.unknown() });
export type WorkflowRunView = v.InferOutput<typeof WorkflowRunView>;

/** A cron schedule of a workflow: it runs the workflow as its creator with `input` at each tick. */
export const WorkflowScheduleView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  workflow_id: field.Uuid,
  name: v.string(),
  /** Five fields (minute hour day month weekday), or six with seconds first. */
  cron: v.string(),
  /** An IANA time zone. */
  timezone: v.string(),
  input: v.unknown(),
  paused: v.boolean(),
  /** Who it runs as: its creator, or whoever changed it last. */
  created_by: field.Uuid,
  /** The next tick it fires at; null while paused. */
  next_run_at: v.nullable(field.Timestamp),
  /** The tick it last fired at, and that run. */
  last_run_at: v.nullable(field.Timestamp),
  last_run_id: v.nullable(field.Uuid),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type WorkflowScheduleView = v.InferOutput<typeof WorkflowScheduleView>;

/** An inbound webhook of a workflow: senders post to `path` on this service; it runs as its creator. */
export const WorkflowHookView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  workflow_id: field.Uuid,
  name: v.string(),
  /** `/api/v1/hooks/<id>`: needs no credential, only a signature made with the secret. */
  path: v.string(),
  paused: v.boolean(),
  /** Who its runs run as: its creator, or whoever changed it last. */
  created_by: field.Uuid,
  secret_rotated_at: field.Timestamp,
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type WorkflowHookView = v.InferOutput<typeof WorkflowHookView>;

/** A hook with its signing secret: answered once, when created or when its secret is rotated. */
export const WorkflowHookWithSecret = v.object({ ...WorkflowHookView.entries, secret: v.string() });
export type WorkflowHookWithSecret = v.InferOutput<typeof WorkflowHookWithSecret>;

/** An event trigger of a workflow: it runs the workflow, as its creator, with each event as `$input`. */
export const WorkflowTriggerView = v.object({
  id: field.Uuid,
  workspace_id: field.Uuid,
  workflow_id: field.Uuid,
  name: v.string(),
  event: v.picklist(['file_uploaded', 'document_changed', 'row_inserted', 'row_updated', 'row_deleted'] as const satisfies readonly WorkflowTriggerEvent[]),
  /** Row events: the table. */
  table_name: v.nullable(v.string()),
  paused: v.boolean(),
  created_by: field.Uuid,
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type WorkflowTriggerView = v.InferOutput<typeof WorkflowTriggerView>;

/** One event of a trigger and its delivery: pending → running → succeeded, or retried, or dead (replayable). */
export const WorkflowEventView = v.object({
  id: field.Uuid,
  trigger_id: field.Uuid,
  workflow_id: field.Uuid,
  /** The run's `$input`: `{ type, workspace_id, occurred_at, … }`. */
  event: field.JsonObject,
  status: v.picklist(['pending', 'running', 'succeeded', 'dead']),
  attempts: field.NonNegative,
  /** When a pending event is tried next. */
  next_attempt_at: field.Timestamp,
  /** The run of the latest attempt. */
  run_id: v.nullable(field.Uuid),
  /** Why the latest attempt failed (the run's error, or the loop guard); null otherwise. */
  last_error: v.unknown(),
  created_at: field.Timestamp,
  updated_at: field.Timestamp,
});
export type WorkflowEventView = v.InferOutput<typeof WorkflowEventView>;
