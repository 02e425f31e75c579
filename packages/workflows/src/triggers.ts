/**
 * Event triggers of workflows (issue 19). A trigger starts its workflow, as its creator, when something happens in
 * its workspace: a file uploaded, a document created, changed or deleted. The change writes one event per matching
 * trigger in its own transaction (emitWorkflowEvents: an outbox, so an event exists exactly when its change does). A
 * dispatcher in every process with background work (dispatchWorkflowEvents, each tick) follows the events:
 *   pending (due) → a run queued (trigger `event`), the event `running` → its run succeeded: `succeeded`; failed:
 *   `pending` again after a growing delay, or `dead` after the last attempt; cancelled: `dead` (visible, replayable).
 * Rows are locked (FOR UPDATE SKIP LOCKED) while they move, so any number of processes dispatch each event once per
 * attempt. Delivery is at least once: a run that did its work and then failed to record it is tried again.
 * Loop guard: a trigger accepts at most TRIGGER_MAX_EVENTS_PER_MINUTE events; beyond that its events are recorded
 * dead at once (`kind: "loop_guard"`), so a workflow that causes its own trigger's event cannot run away.
 */
import { type Db, isUuid, newId, sql, type WorkflowEventRow, type WorkflowTriggerEvent, type WorkflowTriggerRow } from '@wds/db';
import { conflict, notFound } from '@wds/errors';
import * as v from 'valibot';
import { enqueueRun, type WorkflowJobDeps } from './queued.js';
import { automationRows } from './automations.js';
import { countQueuedRuns, getWorkflow, queueRun } from './store.js';

export interface TriggerConfig {
  /** Attempts of an event before it is dead (the first included). */
  TRIGGER_MAX_ATTEMPTS: number;
  /** The delay before the second attempt; doubled for each next one. */
  TRIGGER_RETRY_DELAY_MS: number;
  /** Events one trigger accepts per minute; more are dead at once (the loop guard). */
  TRIGGER_MAX_EVENTS_PER_MINUTE: number;
  WORKFLOW_WORKSPACE_QUEUED_MAX: number;
}

/** The events a trigger can be created for today (row events come with the row capture). */
const EVENTS = ['file_uploaded', 'document_changed'] as const;
const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255));

export const CreateTriggerSchema = v.strictObject({
  name: v.optional(Name),
  event: v.picklist(EVENTS, `must be one of ${EVENTS.join(', ')}`),
  paused: v.optional(v.boolean(), false),
});
export const UpdateTriggerSchema = v.strictObject({ name: v.optional(Name), paused: v.optional(v.boolean()) });

export interface WorkflowTriggerView {
  id: string;
  workspace_id: string;
  workflow_id: string;
  name: string;
  event: WorkflowTriggerEvent;
  table_name: string | null;
  paused: boolean;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface WorkflowEventView {
  id: string;
  trigger_id: string;
  workflow_id: string;
  /** The run's `$input`: `{ type, workspace_id, occurred_at, … }`. */
  event: Record<string, unknown>;
  status: WorkflowEventRow['status'];
  attempts: number;
  /** When a pending event is tried next. */
  next_attempt_at: string;
  /** The run of the latest attempt. */
  run_id: string | null;
  /** Why the latest attempt failed: the run's error, or the loop guard. */
  last_error: unknown;
  created_at: string;
  updated_at: string;
}

const toView = (r: WorkflowTriggerRow): WorkflowTriggerView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  workflow_id: r.workflow_id,
  name: r.name,
  event: r.event,
  table_name: r.table_name,
  paused: r.paused,
  created_by: r.created_by,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});
const toEventView = (r: WorkflowEventRow): WorkflowEventView => ({
  id: r.id,
  trigger_id: r.trigger_id,
  workflow_id: r.workflow_id,
  // Written by emitWorkflowEvents: always an object.
  event: r.event as Record<string, unknown>,
  status: r.status,
  attempts: r.attempts,
  next_attempt_at: r.next_attempt_at.toISOString(),
  run_id: r.run_id,
  last_error: r.last_error ?? null,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

const triggers = automationRows('platform.workflow_triggers', 'Trigger');

export async function listTriggers(db: Db, workspaceId: string, workflowId: string, page: { limit: number; offset: number }): Promise<WorkflowTriggerView[]> {
  return (await triggers.list(db, workspaceId, workflowId, page)).map(toView);
}

export async function getTrigger(db: Db, workspaceId: string, workflowId: string, triggerId: string): Promise<WorkflowTriggerView> {
  return toView(await triggers.get(db, workspaceId, workflowId, triggerId));
}

export async function createTrigger(
  db: Db,
  workspaceId: string,
  workflowId: string,
  t: v.InferOutput<typeof CreateTriggerSchema>,
  createdBy: string,
): Promise<WorkflowTriggerView> {
  await getWorkflow(db, workspaceId, workflowId);
  const row = await db
    .insertInto('platform.workflow_triggers')
    .values({ id: newId(), workspace_id: workspaceId, workflow_id: workflowId, name: t.name ?? t.event, event: t.event, table_name: null, paused: t.paused, created_by: createdBy })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

/** Renames or pauses a trigger; whoever changes it is from then on the user its runs run as. */
export async function updateTrigger(
  db: Db,
  workspaceId: string,
  workflowId: string,
  triggerId: string,
  patch: v.InferOutput<typeof UpdateTriggerSchema>,
  changedBy: string,
): Promise<WorkflowTriggerView> {
  const current = await triggers.get(db, workspaceId, workflowId, triggerId);
  return toView(await triggers.update(db, current.id, patch, changedBy));
}

/** Deletes a trigger and its events (their runs stay in the run history). */
export async function deleteTrigger(db: Db, workspaceId: string, workflowId: string, triggerId: string): Promise<WorkflowTriggerView> {
  return toView(await triggers.remove(db, workspaceId, workflowId, triggerId));
}

/** A trigger's events, newest first; `status` keeps those in one state (`dead`: the dead letters). */
export async function listEvents(
  db: Db,
  workspaceId: string,
  workflowId: string,
  triggerId: string,
  page: { limit: number; offset: number; status?: WorkflowEventRow['status'] | undefined },
): Promise<WorkflowEventView[]> {
  const t = await triggers.get(db, workspaceId, workflowId, triggerId);
  let q = db.selectFrom('platform.workflow_events').selectAll().where('trigger_id', '=', t.id);
  if (page.status !== undefined) q = q.where('status', '=', page.status);
  return (await q.orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()).map(toEventView);
}

/** Replays a dead event: pending again, its attempts counted afresh. 409 for an event that is not dead. */
export async function replayEvent(db: Db, workspaceId: string, workflowId: string, triggerId: string, eventId: string): Promise<WorkflowEventView> {
  const t = await triggers.get(db, workspaceId, workflowId, triggerId);
  const row = isUuid(eventId)
    ? await db
        .updateTable('platform.workflow_events')
        .set({ status: 'pending', attempts: 0, next_attempt_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
        .where('id', '=', eventId)
        .where('trigger_id', '=', t.id)
        .where('status', '=', 'dead')
        .returningAll()
        .executeTakeFirst()
    : undefined;
  if (row) return toEventView(row);
  const exists = isUuid(eventId)
    ? await db.selectFrom('platform.workflow_events').select('status').where('id', '=', eventId).where('trigger_id', '=', t.id).executeTakeFirst()
    : undefined;
  if (!exists) throw notFound('Event');
  throw conflict(`The event is ${exists.status}`, 'only a dead event can be replayed');
}

/** Something that happened, as the runs of its triggers get it (`$input`). */
export interface WorkspaceEvent {
  workspaceId: string;
  type: Extract<WorkflowTriggerEvent, 'file_uploaded' | 'document_changed'>;
  /** What the run reads besides `type`, `workspace_id` and `occurred_at` (the file, the document and the action). */
  data: Record<string, unknown>;
}

/** The file_uploaded event of an upload: what identifies the file (a run reads its bytes by id). */
export function fileUploaded(f: {
  id: string;
  workspace_id: string;
  filename: string;
  content_type: string;
  size: number;
  sha256: string;
  metadata: unknown;
  created_at: string;
}): WorkspaceEvent {
  const { id, filename, content_type, size, sha256, metadata, created_at } = f;
  return { workspaceId: f.workspace_id, type: 'file_uploaded', data: { file: { id, filename, content_type, size, sha256, metadata, created_at } } };
}

/** The document_changed event of a document created, updated (a section replaced too) or deleted: what it is now. */
export function documentChanged(
  action: 'created' | 'updated' | 'deleted',
  d: { id: string; workspace_id: string; title: string; doc_type: string; status: string; version: number },
): WorkspaceEvent {
  const { id, title, doc_type, status, version } = d;
  return { workspaceId: d.workspace_id, type: 'document_changed', data: { action, document: { id, title, doc_type, status, version } } };
}

/**
 * Writes the event for every live trigger of its workspace and type, in the caller's transaction (the change's own):
 * it exists exactly when the change does. A trigger over its events-per-minute budget gets it dead (the loop guard).
 */
export async function emitWorkflowEvents(db: Db, config: Pick<TriggerConfig, 'TRIGGER_MAX_EVENTS_PER_MINUTE'>, e: WorkspaceEvent): Promise<number> {
  const triggers = await db
    .selectFrom('platform.workflow_triggers')
    .select(['id', 'workflow_id'])
    .where('workspace_id', '=', e.workspaceId)
    .where('event', '=', e.type)
    .where('paused', '=', false)
    .execute();
  if (triggers.length === 0) return 0;
  const event = JSON.stringify({ type: e.type, workspace_id: e.workspaceId, occurred_at: new Date().toISOString(), ...e.data });
  for (const t of triggers) {
    const recent = await db
      .selectFrom('platform.workflow_events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('trigger_id', '=', t.id)
      .where('created_at', '>', sql<Date>`now() - interval '1 minute'`)
      .executeTakeFirstOrThrow();
    const guarded = Number(recent.n) >= config.TRIGGER_MAX_EVENTS_PER_MINUTE;
    await db
      .insertInto('platform.workflow_events')
      .values({
        id: newId(),
        trigger_id: t.id,
        workspace_id: e.workspaceId,
        workflow_id: t.workflow_id,
        event,
        status: guarded ? 'dead' : 'pending',
        ...(guarded
          ? { last_error: JSON.stringify({ kind: 'loop_guard', message: `the trigger already had ${config.TRIGGER_MAX_EVENTS_PER_MINUTE} events in the last minute (TRIGGER_MAX_EVENTS_PER_MINUTE)` }) }
          : {}),
      })
      .execute();
  }
  return triggers.length;
}

/** How many events one round moves at most (the next round takes the rest). */
const ROUND = 100;

/**
 * One round of the dispatcher: settles the events whose run ended (succeeded; or failed/cancelled → retried later or
 * dead), then queues a run for each due pending event (as its trigger's creator, `$input` the event). Returns the
 * runs queued.
 */
export async function dispatchWorkflowEvents(deps: WorkflowJobDeps & { config: TriggerConfig }): Promise<string[]> {
  const { config } = deps;
  // 1. Settle: the runs of running events that have ended.
  await deps.db.transaction().execute(async (tx) => {
    const ended = await tx
      .selectFrom('platform.workflow_events as e')
      .innerJoin('platform.workflow_runs as r', 'r.id', 'e.run_id')
      .select(['e.id', 'e.attempts', 'r.status as run_status', 'r.error as run_error'])
      .where('e.status', '=', 'running')
      .where('r.status', 'in', ['succeeded', 'failed', 'cancelled'])
      .limit(ROUND)
      .forUpdate('e')
      .skipLocked()
      .execute();
    for (const e of ended) {
      if (e.run_status === 'succeeded') {
        await tx.updateTable('platform.workflow_events').set({ status: 'succeeded', updated_at: sql<Date>`now()` }).where('id', '=', e.id).execute();
        continue;
      }
      // A run someone cancelled is not tried again: its event is dead (and can be replayed).
      const dead = e.run_status === 'cancelled' || e.attempts >= config.TRIGGER_MAX_ATTEMPTS;
      const delayMs = config.TRIGGER_RETRY_DELAY_MS * 2 ** Math.max(0, e.attempts - 1);
      await tx
        .updateTable('platform.workflow_events')
        .set({
          status: dead ? 'dead' : 'pending',
          last_error: JSON.stringify(e.run_error ?? { kind: e.run_status, message: `the run ended ${e.run_status}` }),
          next_attempt_at: sql<Date>`now() + ${delayMs} * interval '1 millisecond'`,
          updated_at: sql<Date>`now()`,
        })
        .where('id', '=', e.id)
        .execute();
    }
  });

  // 2. Dispatch: a queued run per due pending event.
  const queued: string[] = [];
  await deps.db.transaction().execute(async (tx) => {
    const due = await tx
      .selectFrom('platform.workflow_events as e')
      .innerJoin('platform.workflow_triggers as t', 't.id', 'e.trigger_id')
      .innerJoin('platform.workflows as w', 'w.id', 'e.workflow_id')
      .select(['e.id', 'e.trigger_id', 'e.workspace_id', 'e.workflow_id', 'e.event', 'e.attempts', 't.created_by', 't.paused'])
      .where('e.status', '=', 'pending')
      .where('e.next_attempt_at', '<=', sql<Date>`now()`)
      .where('w.deleted_at', 'is', null)
      .orderBy('e.next_attempt_at')
      .limit(ROUND)
      .forUpdate('e')
      .skipLocked()
      .execute();
    for (const e of due) {
      // A paused trigger keeps its events pending; a full workspace queue defers them a little.
      if (e.paused) continue;
      if ((await countQueuedRuns(tx, e.workspace_id)) >= config.WORKFLOW_WORKSPACE_QUEUED_MAX) {
        await tx.updateTable('platform.workflow_events').set({ next_attempt_at: sql<Date>`now() + interval '5 seconds'` }).where('id', '=', e.id).execute();
        continue;
      }
      const runId = await queueRun(tx, {
        workflow: { id: e.workflow_id, workspace_id: e.workspace_id },
        input: e.event,
        executedBy: e.created_by,
        trigger: 'event',
        triggerId: e.trigger_id,
      });
      await tx
        .updateTable('platform.workflow_events')
        .set({ status: 'running', run_id: runId, attempts: e.attempts + 1, updated_at: sql<Date>`now()` })
        .where('id', '=', e.id)
        .execute();
      queued.push(runId);
    }
  });
  for (const runId of queued) await enqueueRun(deps, runId);
  return queued;
}
