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
 * Row events (row_inserted, row_updated, row_deleted of one table) come from row capture (migration 0016): each
 * round first turns the captured changes a live row trigger waits for (`platform.row_changes.needs_dispatch`) into
 * events, one per trigger and row its owner may select (dispatchRowChanges).
 */
import { type Db, newId, sql, type Uuid, type WorkflowEventRow, type WorkflowTriggerEvent, type WorkflowTriggerRow } from '@wds/db';
import { conflict, notFound, ServiceError, validationError } from '@wds/errors';
import { isLogicalName } from '@wds/sql-rewriter';
import { type WorkspaceSql, capturedImagesSql } from '@wds/workspace-sql';
import * as v from 'valibot';
import { enqueueRun, type WorkflowJobDeps } from './queued.js';
import { automationRows } from './automations.js';
import { countQueuedRuns, getWorkflow, queueRun, ROW_EVENTS, redactedError, rowEventFor, rowsHidden } from './store.js';
import type { RunError } from './engine.js';
import { runOrigin } from './keys.js';
import type { WorkflowEventView, WorkflowTriggerView } from './views.js';

export interface TriggerConfig {
  /** Attempts of an event before it is dead (the first included). */
  TRIGGER_MAX_ATTEMPTS: number;
  /** The delay before the second attempt; doubled for each next one. */
  TRIGGER_RETRY_DELAY_MS: number;
  /** Events one trigger accepts per minute; more are dead at once (the loop guard). */
  TRIGGER_MAX_EVENTS_PER_MINUTE: number;
  WORKFLOW_WORKSPACE_QUEUED_MAX: number;
}

/** The events a trigger can be created for; the row events are of one table (`table_name`). */
const EVENTS = ['file_uploaded', 'document_changed', 'row_inserted', 'row_updated', 'row_deleted'] as const;
type RowEvent = Extract<WorkflowTriggerEvent, 'row_inserted' | 'row_updated' | 'row_deleted'>;
const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255));

export const CreateTriggerSchema = v.strictObject({
  name: v.optional(Name),
  event: v.picklist(EVENTS, `must be one of ${EVENTS.join(', ')}`),
  /** Row events: the table (its logical name); refused for the others. */
  table_name: v.optional(v.pipe(v.string(), v.maxLength(255))),
  paused: v.optional(v.boolean(), false),
});
export const UpdateTriggerSchema = v.strictObject({ name: v.optional(Name), paused: v.optional(v.boolean()) });

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
/** A run's error (it names its step), as a settled event keeps it; the dispatcher's own errors name none. */
const isRunError = (e: unknown): e is RunError =>
  e !== null && typeof e === 'object' && typeof (e as { step?: unknown }).step === 'string' && typeof (e as { kind?: unknown }).kind === 'string';

/** An event as `readerId` sees it: a row event's rows, and its run's error words, only for its owner (rowsHidden). */
const toEventView = (r: WorkflowEventRow, ownerId: string, readerId: string | undefined): WorkflowEventView => {
  const hidden = rowsHidden(r.event, r.owner_id ?? ownerId, readerId);
  return {
    id: r.id,
    trigger_id: r.trigger_id,
    workflow_id: r.workflow_id,
    // Written by writeEvents: always an object.
    event: rowEventFor(r.event, r.owner_id ?? ownerId, readerId) as Record<string, unknown>,
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: r.next_attempt_at.toISOString(),
    run_id: r.run_id,
    // The service's own words (loop guard, owner changed, policy check) stay; a run's error may quote the rows.
    last_error: hidden && isRunError(r.last_error) ? redactedError(r.last_error) : (r.last_error ?? null),
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
};

const triggers = automationRows('platform.workflow_triggers', 'Trigger');

export async function listTriggers(db: Db, workspaceId: string, workflowId: Uuid, page: { limit: number; offset: number }): Promise<WorkflowTriggerView[]> {
  return (await triggers.list(db, workspaceId, workflowId, page)).map(toView);
}

export async function getTrigger(db: Db, workspaceId: string, workflowId: Uuid, triggerId: Uuid): Promise<WorkflowTriggerView> {
  return toView(await triggers.get(db, workspaceId, workflowId, triggerId));
}

export async function createTrigger(
  db: Db,
  workspaceId: string,
  workflowId: Uuid,
  t: v.InferOutput<typeof CreateTriggerSchema>,
  createdBy: string,
): Promise<WorkflowTriggerView> {
  const rowEvent = ROW_EVENTS.includes(t.event);
  if (rowEvent && t.table_name === undefined) throw validationError(`table_name: required for ${t.event}`);
  if (!rowEvent && t.table_name !== undefined) throw validationError(`table_name: only row events (${ROW_EVENTS.join(', ')}) are of a table`);
  if (t.table_name !== undefined && !isLogicalName(t.table_name)) {
    throw validationError(`table_name: ${JSON.stringify(t.table_name.slice(0, 80))} is not a table name ([a-z_][a-z0-9_]*, at most 23 characters)`);
  }
  await getWorkflow(db, workspaceId, workflowId);
  const tableName = t.table_name ?? null;
  const row = await db
    .insertInto('platform.workflow_triggers')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      workflow_id: workflowId,
      name: t.name ?? (tableName ? `${t.event} ${tableName}` : t.event),
      event: t.event,
      table_name: tableName,
      paused: t.paused,
      created_by: createdBy,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

/** Renames or pauses a trigger; whoever changes it is from then on the user its runs run as. */
export async function updateTrigger(
  db: Db,
  workspaceId: string,
  workflowId: Uuid,
  triggerId: Uuid,
  patch: v.InferOutput<typeof UpdateTriggerSchema>,
  changedBy: string,
): Promise<WorkflowTriggerView> {
  const current = await triggers.get(db, workspaceId, workflowId, triggerId);
  return toView(await triggers.update(db, current.id, patch, changedBy));
}

/** Deletes a trigger and its events (their runs stay in the run history). */
export async function deleteTrigger(db: Db, workspaceId: string, workflowId: Uuid, triggerId: Uuid): Promise<WorkflowTriggerView> {
  return toView(await triggers.remove(db, workspaceId, workflowId, triggerId));
}

/** A trigger's events, newest first; `status` keeps those in one state (`dead`: the dead letters). */
export async function listEvents(
  db: Db,
  workspaceId: string,
  workflowId: Uuid,
  triggerId: Uuid,
  page: { limit: number; offset: number; status?: WorkflowEventRow['status'] | undefined },
  readerId?: string,
): Promise<WorkflowEventView[]> {
  const t = await triggers.get(db, workspaceId, workflowId, triggerId);
  let q = db.selectFrom('platform.workflow_events').selectAll().where('trigger_id', '=', t.id);
  if (page.status !== undefined) q = q.where('status', '=', page.status);
  return (await q.orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()).map((r) => toEventView(r, t.created_by, readerId));
}

/** Replays a dead event: pending again, its attempts counted afresh. 409 for an event that is not dead. */
export async function replayEvent(
  db: Db,
  workspaceId: string,
  workflowId: Uuid,
  triggerId: Uuid,
  eventId: Uuid,
  readerId?: string,
): Promise<WorkflowEventView> {
  const t = await triggers.get(db, workspaceId, workflowId, triggerId);
  const row = await db
    .updateTable('platform.workflow_events')
    .set({ status: 'pending', attempts: 0, next_attempt_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', eventId)
    .where('trigger_id', '=', t.id)
    .where('status', '=', 'dead')
    .returningAll()
    .executeTakeFirst();
  if (row) return toEventView(row, t.created_by, readerId);
  const exists = await db.selectFrom('platform.workflow_events').select('status').where('id', '=', eventId).where('trigger_id', '=', t.id).executeTakeFirst();
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
 * Writes a trigger's events (each the JSON text of a run's `$input`) with the loop guard: the trigger's events of the
 * last minute are counted once, and the events beyond TRIGGER_MAX_EVENTS_PER_MINUTE are written as one dead event —
 * the first of them, with `dropped` the number it stands for and no rows — so a statement of a million rows costs one
 * dead event, not a million. `owner` is whose select policy chose a row event's rows.
 */
async function writeEvents(
  db: Db,
  config: Pick<TriggerConfig, 'TRIGGER_MAX_EVENTS_PER_MINUTE'>,
  trigger: { id: string; workflow_id: string; workspace_id: string },
  events: string[],
  owner: string | null = null,
): Promise<void> {
  if (events.length === 0) return;
  const recent = await db
    .selectFrom('platform.workflow_events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('trigger_id', '=', trigger.id)
    .where('created_at', '>', sql<Date>`now() - interval '1 minute'`)
    .executeTakeFirstOrThrow();
  const max = config.TRIGGER_MAX_EVENTS_PER_MINUTE;
  const room = Math.max(0, max - Number(recent.n));
  const row = (event: string, status: 'pending' | 'dead', lastError?: string) => ({
    id: newId(),
    trigger_id: trigger.id,
    workspace_id: trigger.workspace_id,
    workflow_id: trigger.workflow_id,
    event,
    status,
    owner_id: owner,
    ...(lastError ? { last_error: lastError } : {}),
  });
  const values = events.slice(0, room).map((e) => row(e, 'pending'));
  const over = events.slice(room);
  if (over.length > 0) {
    const first = JSON.parse(over[0] as string) as Record<string, unknown>;
    const summary = over.length === 1 ? (over[0] as string) : JSON.stringify({ ...first, ...('row' in first ? { row: null } : {}), ...('old' in first ? { old: null } : {}), dropped: over.length });
    const message = `the trigger already had ${max} events in the last minute (TRIGGER_MAX_EVENTS_PER_MINUTE)${over.length > 1 ? `; this one stands for ${over.length}` : ''}`;
    values.push(row(summary, 'dead', JSON.stringify({ kind: 'loop_guard', message })));
  }
  // In slices: a statement's parameters are bounded (65535).
  for (let i = 0; i < values.length; i += 1000) {
    await db.insertInto('platform.workflow_events').values(values.slice(i, i + 1000)).execute();
  }
}

/**
 * Writes the event for every live trigger of its workspace and type, in the caller's transaction (the change's own):
 * it exists exactly when the change does. A trigger over its events-per-minute budget gets it dead (the loop guard).
 */
export async function emitWorkflowEvents(db: Db, config: Pick<TriggerConfig, 'TRIGGER_MAX_EVENTS_PER_MINUTE'>, e: WorkspaceEvent): Promise<number> {
  const triggers = await db
    .selectFrom('platform.workflow_triggers')
    .select(['id', 'workflow_id', 'workspace_id'])
    .where('workspace_id', '=', e.workspaceId)
    .where('event', '=', e.type)
    .where('paused', '=', false)
    .execute();
  if (triggers.length === 0) return 0;
  const event = JSON.stringify({ type: e.type, workspace_id: e.workspaceId, occurred_at: new Date().toISOString(), ...e.data });
  for (const t of triggers) await writeEvents(db, config, t, [event]);
  return triggers.length;
}

/** What dispatchRowChanges needs: the database, the select policies of a trigger's owner, the loop guard. */
export interface RowDispatchDeps {
  db: Db;
  sql: Pick<WorkspaceSql, 'visibleRows'>;
  config: Pick<TriggerConfig, 'TRIGGER_MAX_EVENTS_PER_MINUTE'>;
  logger: { warn(obj: object, msg: string): void };
}

/** Workspaces one round serves, and the captured changes (and image bytes) it takes from each at most. */
const ROW_WORKSPACES = 20;
const ROW_ROUND = 200;
const ROW_ROUND_BYTES = 8 * 1024 * 1024;
/** How long a change whose policy check keeps failing is tried (every 30 s) before its events are recorded dead. */
const ROW_DISPATCH_GIVE_UP_MS = 3600_000;
const EVENT_OF_OP = { insert: 'row_inserted', update: 'row_updated', delete: 'row_deleted' } as const satisfies Record<string, RowEvent>;

/** A captured change as dispatch reads it (capturedImagesSql): images as JSON text, long ones cut to their policy columns. */
interface CapturedChange {
  id: string;
  batch: string;
  workspace_id: string;
  table_name: string;
  op: 'insert' | 'update' | 'delete';
  created_at: Date;
  row: string | null;
  old: string | null;
  row_truncated: boolean;
  old_truncated: boolean;
}

/** visibleRows over images some of which may be missing (null): those are never visible; indexes into `images`. */
async function visibleOf(
  rows: RowDispatchDeps['sql'],
  caller: Parameters<WorkspaceSql['visibleRows']>[0],
  table: string,
  images: (string | null)[],
): Promise<{ index: number; row: Record<string, unknown> }[]> {
  const present = images.flatMap((image, index) => (image === null ? [] : [{ image, index }]));
  const visible = await rows.visibleRows(caller, table, present.map((p) => p.image));
  return visible.flatMap((r) => {
    const p = present[r.index];
    return p ? [{ index: p.index, row: r.row }] : [];
  });
}

/** A row as an event carries it: whole, or by reference (its id) when it was too long to capture whole. */
const carried = (row: Record<string, unknown>, truncated: boolean): Record<string, unknown> => (truncated ? { id: row.id ?? null, truncated: true } : row);

/**
 * Turns the captured row changes a live row trigger waits for (`needs_dispatch`) into workflow events. Each round
 * serves up to ROW_WORKSPACES workspaces, oldest change first, and takes up to ROW_ROUND changes (ROW_ROUND_BYTES of
 * images) from each, in a transaction of its own: a workspace that wrote a million rows gets its turn like the others
 * and never holds them up. The changes of one statement (a batch) and table go to each live trigger of their table and
 * event (its workflow not deleted), one event per row that the trigger's owner (`created_by`) may select — its select
 * policy evaluated over the captured image (the new row; a delete's old row), the row as they would read it (a row too
 * long to capture whole by reference: `{ id, truncated: true }`). An update's event has `old` too: the old row as they
 * may read it, or null. The changes are then marked dispatched. A group whose policies cannot be evaluated now (the
 * database away) is tried again 30 s later, for an hour; then each trigger gets a dead event without the row
 * (`last_error.kind: "policy_check"`). Returns the changes dispatched.
 */
export async function dispatchRowChanges(deps: RowDispatchDeps): Promise<number> {
  const due = await deps.db
    .selectFrom('platform.row_changes')
    .select('workspace_id')
    .select((eb) => eb.fn.min('id').as('first'))
    .where('needs_dispatch', '=', true)
    .where((eb) => eb.or([eb('dispatch_after', 'is', null), eb('dispatch_after', '<=', sql<Date>`now()`)]))
    .groupBy('workspace_id')
    .orderBy('first')
    .limit(ROW_WORKSPACES)
    .execute();
  let total = 0;
  for (const { workspace_id } of due) {
    try {
      total += await dispatchWorkspaceRowChanges(deps, workspace_id);
    } catch (err) {
      deps.logger.warn({ workspace_id, err: (err as Error).message }, 'row changes of a workspace not dispatched this round');
    }
  }
  return total;
}

async function dispatchWorkspaceRowChanges(deps: RowDispatchDeps, workspaceId: string): Promise<number> {
  return deps.db.transaction().execute(async (tx) => {
    // Locked first (FOR UPDATE takes no window function), then cut to the byte budget (locked rows past it wait for
    // the next round).
    const { rows: changes } = await sql<CapturedChange>`
      SELECT c.* FROM (
        SELECT l.*, sum(l.size) OVER (ORDER BY l.id) AS running FROM (
          SELECT rc.id, rc.batch, rc.workspace_id, rc.table_name, rc.op, rc.created_at, ${sql.raw(capturedImagesSql())}
            FROM platform.row_changes rc
           WHERE rc.workspace_id = ${workspaceId} AND rc.needs_dispatch
             AND (rc.dispatch_after IS NULL OR rc.dispatch_after <= now())
           ORDER BY rc.id
           LIMIT ${ROW_ROUND}
           FOR UPDATE SKIP LOCKED) l) c
       WHERE c.running <= ${ROW_ROUND_BYTES} OR c.running = c.size
       ORDER BY c.id`.execute(tx);
    const groups = new Map<string, CapturedChange[]>();
    for (const c of changes) {
      const key = `${c.table_name}/${c.op}/${c.batch}`;
      const group = groups.get(key);
      if (group) group.push(c);
      else groups.set(key, [c]);
    }
    const done: string[] = [];
    for (const group of groups.values()) {
      const first = group[0];
      if (!first) continue;
      const type = EVENT_OF_OP[first.op];
      const triggers = await tx
        .selectFrom('platform.workflow_triggers as t')
        .innerJoin('platform.workflows as w', 'w.id', 't.workflow_id')
        .select(['t.id', 't.workflow_id', 't.workspace_id', 't.created_by'])
        .where('t.workspace_id', '=', workspaceId)
        .where('t.table_name', '=', first.table_name)
        .where('t.event', '=', type)
        .where('t.paused', '=', false)
        .where('w.deleted_at', 'is', null)
        .orderBy('t.id')
        .execute();
      // Every owner's view is read before anything is written: a group is dispatched whole or not at all — except
      // that a trigger whose owner's policy fails over these rows (a condition that cannot be evaluated over them, a
      // column dropped since) gets its dead event, and the other triggers go on.
      const writes: { trigger: (typeof triggers)[number]; events: string[] }[] = [];
      const failed: (typeof triggers)[number][] = [];
      try {
        for (const t of triggers) {
          try {
            const events = await ownerEvents(deps.sql, workspaceId, t.created_by, type, group);
            if (events.length > 0) writes.push({ trigger: t, events });
          } catch (err) {
            if (isTransient(err)) throw err;
            deps.logger.warn(
              { workspace_id: workspaceId, trigger_id: t.id, table: first.table_name, op: first.op, batch: first.batch, err: (err as Error).message },
              "row changes not dispatched to a trigger: its owner's select policy could not be evaluated over them",
            );
            failed.push(t);
          }
        }
      } catch (err) {
        const ids = group.map((c) => c.id);
        // The database's words may quote a value of the row: the log has them, the event a fixed text.
        deps.logger.warn(
          { workspace_id: workspaceId, table: first.table_name, op: first.op, batch: first.batch, err: (err as Error).message },
          "row changes not dispatched: the owner's select policy could not be evaluated",
        );
        if (first.created_at.getTime() < Date.now() - ROW_DISPATCH_GIVE_UP_MS) {
          // Still failing an hour on (the table's columns changed under the captured row, say): each trigger gets a
          // dead event saying so — visible, replayable — without the row, which nobody could check its owner may see.
          for (const t of triggers) await deadPolicyEvent(tx, t, type, first, 'for an hour');
          done.push(...ids);
        } else {
          // Not before a while, and the rest go on meanwhile: a failing group never holds up the others.
          await tx.updateTable('platform.row_changes').set({ dispatch_after: sql<Date>`now() + interval '30 seconds'` }).where('id', 'in', ids).execute();
        }
        continue;
      }
      for (const w of writes) await writeEvents(tx, deps.config, w.trigger, w.events, w.trigger.created_by);
      for (const t of failed) await deadPolicyEvent(tx, t, type, first, 'over these rows');
      for (const c of group) done.push(c.id);
    }
    for (let i = 0; i < done.length; i += 1000) {
      await tx.updateTable('platform.row_changes').set({ needs_dispatch: false }).where('id', 'in', done.slice(i, i + 1000)).execute();
    }
    return done.length;
  });
}

/**
 * The events of one group of changes (one statement, table and operation) for a trigger of `ownerId`: one per row
 * their select policy admits, as they would read it; an update's `old` as they may read it, or null.
 */
async function ownerEvents(
  workspaceSql: RowDispatchDeps['sql'],
  workspaceId: string,
  ownerId: string,
  type: WorkflowTriggerEvent,
  group: CapturedChange[],
): Promise<string[]> {
  const first = group[0] as CapturedChange;
  const caller = { workspaceId, ddlGroupId: null, isAdmin: false, subject: { kind: 'user' as const, userId: ownerId } };
  const visible = await visibleOf(workspaceSql, caller, first.table_name, group.map((c) => (c.op === 'delete' ? c.old : c.row)));
  if (visible.length === 0) return [];
  let oldOf = new Map<number, Record<string, unknown>>();
  if (first.op === 'update') {
    const seen = await visibleOf(workspaceSql, caller, first.table_name, visible.map((r) => group[r.index]?.old ?? null));
    oldOf = new Map(seen.map((o) => [visible[o.index]?.index ?? -1, o.row]));
  }
  return visible.map(({ index, row }) => {
    const c = group[index] ?? first;
    const old = oldOf.get(index);
    return JSON.stringify({
      type,
      workspace_id: workspaceId,
      occurred_at: c.created_at.toISOString(),
      table_name: first.table_name,
      row: carried(row, c.op === 'delete' ? c.old_truncated : c.row_truncated),
      ...(first.op === 'update' ? { old: old ? carried(old, c.old_truncated) : null } : {}),
    });
  });
}

/** A failure that may pass (the database away, its pool full, a timeout): the whole group is tried again later. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (code === 'SERVICE_UNAVAILABLE' || code === 'TOO_MANY_REQUESTS') return true;
  return !(err instanceof ServiceError) || /statement timeout/.test(err.message);
}

/**
 * A trigger's dead event for a group of changes its owner's select policy could not be checked over: visible and
 * replayable, without the rows (nobody could check its owner may see them), with a fixed text (the database's words
 * may quote a value of the row; the log has them).
 */
async function deadPolicyEvent(
  tx: Db,
  t: { id: string; workspace_id: string; workflow_id: string; created_by: string },
  type: WorkflowTriggerEvent,
  first: CapturedChange,
  when: string,
): Promise<void> {
  const event = JSON.stringify({ type, workspace_id: t.workspace_id, occurred_at: first.created_at.toISOString(), table_name: first.table_name, row: null });
  const error = JSON.stringify({ kind: 'policy_check', message: `the owner's select policy could not be evaluated over the captured rows ${when}` });
  await tx
    .insertInto('platform.workflow_events')
    .values({ id: newId(), trigger_id: t.id, workspace_id: t.workspace_id, workflow_id: t.workflow_id, event, status: 'dead', owner_id: t.created_by, last_error: error })
    .execute();
}

/** Removes captured row changes older than `retentionMs` that no trigger waits for, up to 10000 per statement. */
export async function pruneRowChanges(db: Db, retentionMs: number): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await db
      .deleteFrom('platform.row_changes')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('platform.row_changes')
          .select('id')
          .where('needs_dispatch', '=', false)
          .where('created_at', '<', sql<Date>`now() - ${Math.max(0, Math.floor(retentionMs))} * interval '1 millisecond'`)
          .limit(10_000),
      )
      .executeTakeFirst();
    const n = Number(r.numDeletedRows);
    total += n;
    if (n < 10_000) return total;
  }
}

/** How many events one round moves at most (the next round takes the rest). */
const ROUND = 100;

/**
 * One round of the dispatcher: turns captured row changes into events (dispatchRowChanges), settles the events whose
 * run ended (succeeded; or failed/cancelled → retried later or dead), then queues a run for each due pending event
 * (as its trigger's creator, `$input` the event). Returns the runs queued.
 */
export async function dispatchWorkflowEvents(
  deps: WorkflowJobDeps & { config: TriggerConfig; sql: WorkflowJobDeps['sql'] & RowDispatchDeps['sql'] },
): Promise<string[]> {
  const { config } = deps;
  // 0. Row events: the captured changes row triggers wait for become events (due at once). Never in the way of 1-2.
  await dispatchRowChanges(deps).catch((err: Error) => deps.logger.warn({ err: err.message }, 'row changes not dispatched this round'));
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
      // A run someone cancelled is not tried again: its event is dead (and can be replayed). Nor is one interrupted:
      // the queue resumed it after each crash until RUN_MAX_ATTEMPTS, so it stops its process every time.
      const interrupted = (e.run_error as { kind?: unknown } | null)?.kind === 'interrupted';
      const dead = e.run_status === 'cancelled' || interrupted || e.attempts >= config.TRIGGER_MAX_ATTEMPTS;
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
      .select(['e.id', 'e.trigger_id', 'e.workspace_id', 'e.workflow_id', 'e.event', 'e.attempts', 'e.owner_id', 't.created_by', 't.paused'])
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
      // A row event's rows were chosen by its owner's select policy: it runs as them or not at all.
      if (e.owner_id !== null && e.owner_id !== e.created_by) {
        const message = "the trigger changed hands after this event was recorded: its rows were chosen by the previous owner's select policy";
        await tx
          .updateTable('platform.workflow_events')
          .set({ status: 'dead', last_error: JSON.stringify({ kind: 'owner_changed', message }), updated_at: sql<Date>`now()` })
          .where('id', '=', e.id)
          .execute();
        continue;
      }
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
        // Every run of this event (its retries, a replay) is the same delivery: its effects carry the same keys.
        origin: runOrigin.event(e.id),
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
