/** Workflows (soft-deleted) and their run records in `platform.workflows` / `platform.workflow_runs`. */
import { type AuditEntry, auditInsert } from '@wds/audit';
import { type Db, isUuid, newId, sql, type WorkflowRow, type WorkflowRunRow, type WorkflowRunStatus, type WorkflowRunTrigger, type WorkflowTriggerEvent, type Uuid } from '@wds/db';
import { conflict, forbidden, notFound } from '@wds/errors';
import type { CreateWorkflow, UpdateWorkflow, WorkflowDefinition } from './definition.js';
import type { ExecutionResult, RunError, StepError, StepRecord } from './engine.js';
import { type AcceptedVersions, acceptedVersions, acceptedVersionsView, sameVersions } from './accepted.js';
import { runOrigin } from './keys.js';
import { INSTANCE_ID } from './liveness.js';
import { boundedStepData, joinStepData, splitStepData } from './step-data.js';
import type * as v from 'valibot';
import type { WorkflowRunSummaryView, WorkflowRunView, WorkflowView } from './views.js';

export function definitionOf(w: Partial<Pick<CreateWorkflow, 'input_schema' | 'input_steps' | 'stf_steps' | 'effect_steps'>>): WorkflowDefinition {
  return {
    input_schema: w.input_schema ?? null,
    input_steps: w.input_steps ?? [],
    stf_steps: w.stf_steps ?? [],
    effect_steps: w.effect_steps ?? [],
  };
}

const toView = (r: WorkflowRow): WorkflowView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  name: r.name,
  description: r.description,
  allow_anonymous_execute: r.allow_anonymous_execute,
  ...(r.definition as WorkflowDefinition),
  accepted_versions: acceptedVersionsView(r.accepted_versions),
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  // A saved definition is what the view states (the view is what the API answers).
}) satisfies v.InferOutput<typeof WorkflowView>;

function live(db: Db, workspaceId: string) {
  return db.selectFrom('platform.workflows').selectAll().where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
}

export async function listWorkflows(db: Db, workspaceId: string, page: { limit: number; offset: number; name?: string | undefined }): Promise<WorkflowView[]> {
  let q = live(db, workspaceId);
  if (page.name !== undefined) q = q.where('name', '=', page.name);
  const rows = await q.orderBy('id').limit(page.limit).offset(page.offset).execute();
  return rows.map(toView);
}

export async function getWorkflow(db: Db, workspaceId: string, id: Uuid): Promise<WorkflowView> {
  const row = await live(db, workspaceId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Workflow');
  return toView(row);
}

/** A new workflow; saving it accepts the newest version of each unpinned step for its automation (accepted.ts). */
export async function createWorkflow(db: Db, workspaceId: string, w: CreateWorkflow, createdBy: string | null): Promise<WorkflowView> {
  const definition = definitionOf(w);
  const { stf, effect } = await acceptedVersions(db, workspaceId, definition);
  const row = await db
    .insertInto('platform.workflows')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      name: w.name,
      description: w.description ?? null,
      allow_anonymous_execute: w.allow_anonymous_execute ?? false,
      definition: JSON.stringify(definition),
      accepted_versions: JSON.stringify({ stf, effect }),
      created_by: createdBy,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

/** The definition after a PATCH: given step lists replace the saved ones. */
export function patchedDefinition(current: WorkflowView, patch: UpdateWorkflow): WorkflowDefinition {
  return {
    input_schema: patch.input_schema !== undefined ? (patch.input_schema ?? null) : current.input_schema,
    input_steps: patch.input_steps ?? current.input_steps,
    stf_steps: patch.stf_steps ?? current.stf_steps,
    effect_steps: patch.effect_steps ?? current.effect_steps,
  };
}

/** The row events: their `$input` is rows its owner's select policy chose. */
export const ROW_EVENTS: readonly WorkflowTriggerEvent[] = ['row_inserted', 'row_updated', 'row_deleted'];

/**
 * What runs a workflow by itself, each as its owner (`created_by`), by the trigger its runs record: where it keeps
 * that owner, and what it is called.
 */
export const AUTOMATION_OF = {
  schedule: { table: 'platform.workflow_schedules', name: 'schedule' },
  webhook: { table: 'platform.workflow_hooks', name: 'hook' },
  event: { table: 'platform.workflow_triggers', name: 'trigger' },
} as const;

/**
 * Saves a changed workflow. Saving accepts it as it is now (accepted.ts): its schedules, hooks and triggers run the
 * newest version of each unpinned step as of this save, never one added later, until it is saved again. When its
 * steps change (`definition` differs from the saved one), or the versions they run (a newer version of one of its
 * STFs or effects has been added since the last save), whoever saves it takes over its schedules, hooks and
 * triggers, which run as their owner: a step reading a table (an input step) reads it with its runner's policies, and
 * a row trigger's `$input` is rows its owner's policy chose — neither may flow into steps or versions another member
 * chose since. A row trigger's events not yet run die as `owner_changed` (the dispatcher), like those of a trigger
 * changed by another editor. Run in the request's transaction.
 */
export async function updateWorkflow(
  db: Db,
  workspaceId: string,
  id: Uuid,
  patch: UpdateWorkflow,
  definition: WorkflowDefinition,
  changedBy: string,
): Promise<WorkflowView> {
  // Locked, so two saves at once each compare with what the other saved (and hand the automation over rightly).
  const row0 = await live(db, workspaceId).where('id', '=', id).forNoKeyUpdate().executeTakeFirst();
  if (!row0) throw notFound('Workflow');
  const current = toView(row0);
  const { stf, effect } = await acceptedVersions(db, workspaceId, definition);
  const accepted = { stf, effect };
  const stepsChanged = JSON.stringify(patchedDefinition(current, {})) !== JSON.stringify(definition);
  if (stepsChanged || !sameVersions(current.accepted_versions, accepted)) {
    for (const { table } of Object.values(AUTOMATION_OF)) {
      await db
        .updateTable(table)
        .set({ created_by: changedBy, updated_at: new Date() })
        .where('workflow_id', '=', id)
        .where('workspace_id', '=', workspaceId)
        .where('created_by', '<>', changedBy)
        .execute();
    }
  }
  const row = await db
    .updateTable('platform.workflows')
    .set({
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.description !== undefined ? { description: patch.description } : {}),
      ...(patch.allow_anonymous_execute !== undefined ? { allow_anonymous_execute: patch.allow_anonymous_execute } : {}),
      definition: JSON.stringify(definition),
      accepted_versions: JSON.stringify(accepted),
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

export async function softDeleteWorkflow(db: Db, workspaceId: string, id: Uuid): Promise<WorkflowView> {
  const w = await getWorkflow(db, workspaceId, id);
  await db.updateTable('platform.workflows').set({ deleted_at: new Date() }).where('id', '=', id).execute();
  return w;
}

// --- runs ---------------------------------------------------------------------------------------------------

/** A row trigger's event (its `$input`): rows chosen by its owner's select policy. */
export const isRowEvent = (event: unknown): event is Record<string, unknown> & { type: string } =>
  event !== null && typeof event === 'object' && !Array.isArray(event) && typeof (event as { type?: unknown }).type === 'string' && (event as { type: string }).type.startsWith('row_');

/**
 * Whether `readerId` may not be shown a row event (a row trigger's `$input`, or the event as listed) or what was made
 * of it: its rows were chosen by its owner's select policy, so only the owner sees them — and the run's output, or an
 * error message that quotes them. Undefined `readerId`: the service itself.
 */
export function rowsHidden(event: unknown, ownerId: string | null, readerId: string | undefined): boolean {
  return readerId !== undefined && readerId !== ownerId && isRowEvent(event);
}

/** A row event as a reader other than its owner sees it: without the rows (`redacted: true`). Anything else as it is. */
export function rowEventFor(event: unknown, ownerId: string | null, readerId: string | undefined): unknown {
  if (!rowsHidden(event, ownerId, readerId)) return event;
  const e = event as Record<string, unknown>;
  return { ...e, row: null, ...('old' in e ? { old: null } : {}), redacted: true };
}

/** What a reader other than a row run's owner is told of an error: where and what kind, not its words. */
const REDACTED_MESSAGE = 'redacted: this run worked on rows only the user it ran as may read';
export function redactedError<E extends StepError>(e: E | null | undefined): E | null {
  if (!e || typeof e !== 'object') return null;
  const { details: _details, ...rest } = e;
  return { ...rest, message: REDACTED_MESSAGE } as E;
}
const redactedStep = (s: StepRecord): StepRecord => (s.error ? { ...s, error: redactedError(s.error) as StepError } : s);

/** What run lists read of a run: everything but its step data and its checkpoint (each can be large, neither is listed). */
type RunSummaryRow = Omit<WorkflowRunRow, 'step_data' | 'checkpoint'>;
const RUN_SUMMARY_COLUMNS = [
  'id', 'workflow_id', 'workspace_id', 'status', 'executed_by', 'input', 'output', 'error', 'steps', 'started_at', 'finished_at', 'duration_ms',
  'owner', 'heartbeat_at', 'trigger', 'trigger_id', 'queued_at', 'cancel_requested_at', 'accepted_versions', 'attempts', 'origin', 'rerun_of',
] as const satisfies readonly (keyof RunSummaryRow)[];
// A column added to workflow_runs is listed above (or left out here on purpose): this fails to compile until it is.
const everySummaryColumn: Exclude<keyof RunSummaryRow, (typeof RUN_SUMMARY_COLUMNS)[number]> extends never ? true : never = true;
void everySummaryColumn;

/**
 * Whether a run's `$input` is rows chosen by the policies of the user it ran as: a row trigger's event, or such an
 * event run again by hand (a rerun of a row run carries its rows, and stays theirs).
 */
const rowInput = (r: Pick<WorkflowRunRow, 'trigger' | 'rerun_of' | 'input'>): boolean => (r.trigger === 'event' || r.rerun_of !== null) && isRowEvent(r.input);

/**
 * Whether a run worked on rows chosen by the policies of the user it ran as, read by someone else: a row trigger's
 * run (its `$input`, see rowsHidden; rowInput), or one whose input step read a table as that user (StepRecord.caller_rows).
 */
const rowsHiddenFrom = (r: RunSummaryRow, readerId: string | undefined): boolean =>
  readerId !== undefined &&
  readerId !== r.executed_by &&
  (rowInput(r) || ((r.steps ?? []) as StepRecord[]).some((s) => s.kind === 'input' && s.caller_rows === true));

/** A run without its input and output; one made of its user's rows (rowsHiddenFrom), for anyone else, without its errors' words. */
const toRunSummary = (r: RunSummaryRow, readerId?: string): WorkflowRunSummaryView => {
  // The JSON columns hold what this package wrote (finishRun: an ExecutionResult's error and steps). Steps never
  // carry their data in `steps` (step_data holds it); stripped all the same, so no list could answer it.
  const error = (r.error ?? null) as RunError | null;
  const steps = ((r.steps ?? []) as StepRecord[]).map(({ input: _input, output: _output, ...s }) => s);
  const hidden = rowsHiddenFrom(r, readerId);
  return {
    id: r.id,
    workflow_id: r.workflow_id,
    status: r.status,
    trigger: r.trigger,
    trigger_id: r.trigger_id,
    executed_by: r.executed_by,
    queued_at: r.queued_at ? r.queued_at.toISOString() : null,
    cancel_requested_at: r.cancel_requested_at ? r.cancel_requested_at.toISOString() : null,
    attempts: r.attempts ?? (r.status === 'queued' ? 0 : 1),
    rerun_of: r.rerun_of ?? null,
    error: hidden ? redactedError(error) : error,
    steps: hidden ? steps.map(redactedStep) : steps,
    started_at: r.started_at.toISOString(),
    finished_at: r.finished_at ? r.finished_at.toISOString() : null,
    duration_ms: r.duration_ms,
  };
};

/**
 * A run with its input and output, and each step's (step-data.ts). One made of its user's rows (rowsHiddenFrom) is
 * whole only for that user: anyone else gets no output, no step's input or output (null), its errors without their
 * messages, and a row trigger's input without the rows (rowEventFor).
 */
const toRunView = (r: WorkflowRunRow, readerId?: string): WorkflowRunView => {
  const summary = toRunSummary(r, readerId);
  const hidden = rowsHiddenFrom(r, readerId);
  return {
    ...summary,
    steps: joinStepData(summary.steps, r.step_data, !hidden),
    input: rowInput(r) ? rowEventFor(r.input ?? null, r.executed_by, readerId) : (r.input ?? null),
    output: hidden ? null : (r.output ?? null),
  };
};

/** The run's row (its workspace's, its workflow's: 404 otherwise). */
async function runRow(db: Db, workspaceId: string, workflowId: Uuid, runId: Uuid): Promise<WorkflowRunRow> {
  await getWorkflow(db, workspaceId, workflowId);
  const row = await db
    .selectFrom('platform.workflow_runs')
    .selectAll()
    .where('id', '=', runId)
    .where('workflow_id', '=', workflowId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound('Workflow run');
  return row;
}

/**
 * The `$input` a reader may run a recorded run again with: the run's own, stored whole. 403 when it is rows only
 * the user it ran as may read (a row trigger's event, or a rerun of one) and the reader is someone else; 409 while
 * the run has not ended (a second run of a queued or running one's input is not what a rerun is for).
 */
export async function rerunInput(db: Db, workspaceId: string, workflowId: Uuid, runId: Uuid, readerId: string): Promise<unknown> {
  const row = await runRow(db, workspaceId, workflowId, runId);
  if (rowInput(row) && rowsHidden(row.input, row.executed_by, readerId)) {
    throw forbidden('The run\'s input is rows only the user it ran as may read', 'only that user may run it again');
  }
  if (row.status === 'queued' || row.status === 'running') {
    throw conflict(`The run has not ended (${row.status})`, 'a run can be run again once it has ended');
  }
  return row.input ?? null;
}

/** A new run's id (runs are ordered by it). */
export const newRunId = (): string => newId();

/**
 * Records that a run started (status `running`), owned by this process (`owner`, see liveness.ts) and alive as of
 * now; its heartbeat keeps it so until it ends, and a sweep fails it as interrupted if the heartbeat stops.
 */
export async function startRun(
  db: Db,
  id: string,
  workflow: { id: string; workspace_id: string },
  input: unknown,
  executedBy: string | null,
  owner: string = INSTANCE_ID,
  /** The run this one runs again (rerun_workflow_run). */
  rerunOf: string | null = null,
): Promise<void> {
  await db
    .insertInto('platform.workflow_runs')
    .values({
      id,
      workflow_id: workflow.id,
      workspace_id: workflow.workspace_id,
      status: 'running',
      executed_by: executedBy,
      input: JSON.stringify(input ?? null),
      owner,
      heartbeat_at: sql<Date>`now()`,
      attempts: 1,
      origin: runOrigin.run('request', id),
      rerun_of: rerunOf,
    })
    .execute();
}

/**
 * Records a finished run: updates the row startRun wrote (also when a sweep already failed it as interrupted: what
 * really happened wins), or (when the run was not recorded at its start) inserts it whole. With `attempt`, only while
 * the run is at that attempt: when another process resumed it meanwhile (this one was only slow), that attempt's
 * end is the run's. The checkpoint is cleared: nothing resumes a run that ended. With `audit`, the audit entry is written by the same statement (a data-modifying CTE: one round trip,
 * one commit, both rows or neither).
 */
export async function finishRun(
  db: Db,
  runId: string,
  result: ExecutionResult,
  started?: { workflow: { id: string; workspace_id: string }; input: unknown; executedBy: string | null; at: Date },
  audit?: AuditEntry,
  attempt?: number,
): Promise<void> {
  // Each step's input and output go to step_data, apart from the records run lists answer.
  const { steps, data } = splitStepData(result.steps);
  const outcome = {
    status: result.status,
    output: JSON.stringify(result.output ?? null),
    error: result.error ? JSON.stringify(result.error) : null,
    steps: JSON.stringify(steps),
    step_data: boundedStepData(data)?.text ?? null,
    finished_at: new Date(),
    duration_ms: result.duration_ms,
    checkpoint: null,
  };
  const insert = (q: Db) =>
    q.insertInto('platform.workflow_runs').values({
      id: runId,
      workflow_id: started?.workflow.id ?? '',
      workspace_id: started?.workflow.workspace_id ?? '',
      executed_by: started?.executedBy ?? null,
      input: JSON.stringify(started?.input ?? null),
      started_at: started?.at ?? new Date(),
      ...outcome,
    });
  const update = (q: Db) => {
    const u = q.updateTable('platform.workflow_runs').set(outcome).where('id', '=', runId);
    return attempt === undefined ? u : u.where((eb) => eb(eb.fn.coalesce('attempts', sql<number>`1`), '=', attempt));
  };
  if (!audit) {
    await (started ? insert(db) : update(db)).execute();
    return;
  }
  const withRun = started
    ? db.with('run', (q) => insert(q as unknown as Db).returning('id'))
    : db.with('run', (q) => update(q as unknown as Db).returning('id'));
  await auditInsert(withRun, audit).execute();
}

/** Runs of a live workflow, newest first, without their input and output (the run itself has them). */
export async function listRuns(
  db: Db,
  workspaceId: string,
  workflowId: Uuid,
  page: {
    limit: number;
    offset: number;
    /** Only runs in this state, started by this kind of trigger, or by this schedule, hook or trigger. */
    status?: WorkflowRunStatus | undefined;
    trigger?: WorkflowRunTrigger | undefined;
    trigger_id?: string | undefined;
  },
  /** Who reads them: a run made of its user's rows is whole only for that user (toRunSummary). */
  readerId?: string,
): Promise<WorkflowRunSummaryView[]> {
  await getWorkflow(db, workspaceId, workflowId);
  let q = db.selectFrom('platform.workflow_runs').select(RUN_SUMMARY_COLUMNS).where('workflow_id', '=', workflowId).where('workspace_id', '=', workspaceId);
  if (page.status !== undefined) q = q.where('status', '=', page.status);
  if (page.trigger !== undefined) q = q.where('trigger', '=', page.trigger);
  if (page.trigger_id !== undefined) q = q.where('trigger_id', '=', page.trigger_id);
  const rows = await q
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map((r) => toRunSummary(r, readerId));
}

export async function getRun(db: Db, workspaceId: string, workflowId: Uuid, runId: Uuid, readerId?: string): Promise<WorkflowRunView> {
  return toRunView(await runRow(db, workspaceId, workflowId, runId), readerId);
}

/** What a queued run is: whose, started by what, with which input. */
export interface QueuedRun {
  workflow: { id: string; workspace_id: string };
  input: unknown;
  executedBy: string | null;
  trigger: Exclude<WorkflowRunTrigger, 'request'>;
  triggerId?: string | null;
  /** An async run: the versions (and steps) of the moment it was asked for, which it runs (accepted.ts). */
  accepted?: AcceptedVersions;
  /** What it is the delivery of (keys.ts runOrigin): an event, a schedule's tick, a hook delivery; default the run itself. */
  origin?: string;
  /** The run it runs again (rerun_workflow_run). */
  rerunOf?: string | undefined;
}

/**
 * Records a run as `queued` (its audit entry in the same statement, when given): a process of the job queue claims
 * it later (claimQueuedRun). Returns its id.
 */
export async function queueRun(db: Db, run: QueuedRun, audit?: (runId: string) => AuditEntry): Promise<string> {
  const id = newRunId();
  const insert = (q: Db) =>
    q.insertInto('platform.workflow_runs').values({
      id,
      workflow_id: run.workflow.id,
      workspace_id: run.workflow.workspace_id,
      status: 'queued',
      trigger: run.trigger,
      trigger_id: run.triggerId ?? null,
      executed_by: run.executedBy,
      input: JSON.stringify(run.input ?? null),
      queued_at: sql<Date>`now()`,
      accepted_versions: run.accepted ? JSON.stringify(run.accepted) : null,
      attempts: 0,
      origin: run.origin ?? `${run.trigger}:${id}`,
      rerun_of: run.rerunOf ?? null,
    });
  if (!audit) await insert(db).execute();
  else await auditInsert(db.with('run', (q) => insert(q as unknown as Db).returning('id')), audit(id)).execute();
  return id;
}

/**
 * Takes a queued run for this process: `running`, owned by `owner`, alive, its attempts counted (the first attempt
 * sets its start; a resumed run keeps it). Undefined when it is not queued any more (cancelled, or claimed by another
 * process): there is nothing to do.
 */
export async function claimQueuedRun(db: Db, runId: string, owner: string = INSTANCE_ID): Promise<WorkflowRunRow | undefined> {
  if (!isUuid(runId)) return undefined;
  return db
    .updateTable('platform.workflow_runs')
    .set({
      status: 'running',
      owner,
      heartbeat_at: sql<Date>`now()`,
      started_at: sql<Date>`CASE WHEN coalesce(attempts, 0) = 0 THEN now() ELSE started_at END`,
      attempts: sql<number>`coalesce(attempts, 0) + 1`,
    })
    .where('id', '=', runId)
    .where('status', '=', 'queued')
    .returningAll()
    .executeTakeFirst();
}

/**
 * Gives a claimed run back to the queue (its process could not run it now; its claim is not counted as an attempt);
 * another attempt claims it again. A run asked to cancel meanwhile ends `cancelled` instead.
 */
export async function requeueRun(db: Db, runId: string): Promise<void> {
  await db
    .updateTable('platform.workflow_runs')
    .set({
      status: sql`CASE WHEN cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END`,
      error: sql`CASE WHEN cancel_requested_at IS NULL THEN error ELSE ${JSON.stringify({ step: 'run', kind: 'cancelled', message: 'Cancelled before it started' })}::jsonb END`,
      finished_at: sql`CASE WHEN cancel_requested_at IS NULL THEN NULL ELSE now() END`,
      owner: null,
      heartbeat_at: null,
      attempts: sql<number>`greatest(coalesce(attempts, 1) - 1, 0)`,
    })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .execute();
}

/** Ends a queued run that cannot run (its workflow or its user is gone) as failed, with why. */
export async function failQueuedRun(db: Db, runId: string, error: { kind: string; message: string }): Promise<void> {
  await db
    .updateTable('platform.workflow_runs')
    .set({ status: 'failed', error: JSON.stringify({ step: 'run', ...error }), finished_at: sql<Date>`now()`, duration_ms: 0, checkpoint: null })
    .where('id', '=', runId)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}

/**
 * Cancels a run: a queued one ends `cancelled` at once (it never starts); a running one is asked to stop
 * (`cancel_requested_at`): its process skips every step that has not started and ends it `cancelled`. 409 for a run
 * that has ended. Returns the run as it is now.
 */
export async function cancelRun(db: Db, workspaceId: string, workflowId: Uuid, runId: Uuid, readerId?: string): Promise<WorkflowRunView> {
  // The workflow is this workspace's (404 otherwise), so its runs are too.
  await getWorkflow(db, workspaceId, workflowId);
  // In this order: a queued run claimed meanwhile is running by the second statement.
  const cancelled = await db
    .updateTable('platform.workflow_runs')
    .set({
      status: 'cancelled',
      cancel_requested_at: sql<Date>`now()`,
      error: JSON.stringify({ step: 'run', kind: 'cancelled', message: 'Cancelled before it started' }),
      finished_at: sql<Date>`now()`,
      duration_ms: 0,
      checkpoint: null,
    })
    .where('id', '=', runId)
    .where('workflow_id', '=', workflowId)
    .where('status', '=', 'queued')
    .returning('id')
    .executeTakeFirst();
  const asked =
    cancelled ??
    (await db
      .updateTable('platform.workflow_runs')
      .set({ cancel_requested_at: sql<Date>`coalesce(cancel_requested_at, now())` })
      .where('id', '=', runId)
      .where('workflow_id', '=', workflowId)
      .where('status', '=', 'running')
      .returning('id')
      .executeTakeFirst());
  if (!asked) {
    const run = await getRun(db, workspaceId, workflowId, runId);
    throw conflict(`The run has already ended (${run.status})`, 'only a queued or running run can be cancelled');
  }
  return getRun(db, workspaceId, workflowId, runId, readerId);
}

/** How many runs of a workspace are queued (its cap: WORKFLOW_WORKSPACE_QUEUED_MAX). */
export async function countQueuedRuns(db: Db, workspaceId: string): Promise<number> {
  const row = await db
    .selectFrom('platform.workflow_runs')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'queued')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Queued runs waiting longer than `olderThanMs` (their job may have been lost: a process died before queuing it). */
export async function staleQueuedRuns(db: Db, olderThanMs: number, limit = 1000): Promise<string[]> {
  const rows = await db
    .selectFrom('platform.workflow_runs')
    .select('id')
    .where('status', '=', 'queued')
    .where('queued_at', '<', sql<Date>`now() - ${Math.max(0, Math.floor(olderThanMs))} * interval '1 millisecond'`)
    .orderBy('queued_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}
