/**
 * Inbound webhooks of workflows (issue 19). A hook has a URL of its own (`/api/v1/hooks/<id>`) that needs no
 * credential and no workspace header: the hook names its workspace and workflow. A delivery must carry an HMAC-SHA256
 * signature of its raw body made with the hook's secret — GitHub's `X-Hub-Signature-256: sha256=<hex>` (also accepted
 * as `X-Signature-256`), or Stripe's `Stripe-Signature: t=<unix>,v1=<hex>` over `<t>.<body>` within five minutes. A
 * delivery that is not signed right, or names no hook (or a paused one), is the same 401 and nothing is recorded. A
 * verified delivery's JSON or form body is `$input` of a run queued as the hook's creator; a delivery id
 * (`X-GitHub-Delivery`, `X-Delivery-Id` or `Idempotency-Key`) or a MAC seen before answers the first run instead
 * of a second.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Db, isUuid, newId, sql, type WorkflowHookRow, type WorkflowRunStatus, type Uuid } from '@wds/db';
import { ServiceError, unauthorized, validationError } from '@wds/errors';
import * as v from 'valibot';
import { enqueueRun, type WorkflowJobDeps } from './queued.js';
import { automationRows } from './automations.js';
import { runOrigin } from './keys.js';
import { countQueuedRuns, getWorkflow, queueRun } from './store.js';
import type { WorkflowHookView, WorkflowHookWithSecret } from './views.js';

/** Seals and opens the hooks' secrets (the service's SECRETS_KEY box); undefined when there is no key. */
export interface SecretSealer {
  seal(plaintext: string, associated: string): Buffer;
  open(sealed: Buffer, associated: string): string;
}

const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255));
export const CreateHookSchema = v.strictObject({ name: v.optional(Name), paused: v.optional(v.boolean(), false) });
export const UpdateHookSchema = v.strictObject({ name: v.optional(Name), paused: v.optional(v.boolean()) });


const hookPath = (id: string) => `/api/v1/hooks/${id}`;
const associated = (id: string) => `hook:${id}`;

const toView = (r: WorkflowHookRow): WorkflowHookView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  workflow_id: r.workflow_id,
  name: r.name,
  path: hookPath(r.id),
  paused: r.paused,
  created_by: r.created_by,
  secret_rotated_at: r.secret_rotated_at.toISOString(),
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

const noSecrets = () => new ServiceError('SERVICE_UNAVAILABLE', 'Hook secrets cannot be stored', 'set SECRETS_KEY');
const newSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

const hooks = automationRows('platform.workflow_hooks', 'Hook');

export async function listHooks(db: Db, workspaceId: string, workflowId: Uuid, page: { limit: number; offset: number }): Promise<WorkflowHookView[]> {
  return (await hooks.list(db, workspaceId, workflowId, page)).map(toView);
}

export async function getHook(db: Db, workspaceId: string, workflowId: Uuid, hookId: Uuid): Promise<WorkflowHookView> {
  return toView(await hooks.get(db, workspaceId, workflowId, hookId));
}

export async function createHook(
  db: Db,
  secrets: SecretSealer | undefined,
  workspaceId: string,
  workflowId: Uuid,
  h: v.InferOutput<typeof CreateHookSchema>,
  createdBy: string,
): Promise<WorkflowHookWithSecret> {
  if (!secrets) throw noSecrets();
  const workflow = await getWorkflow(db, workspaceId, workflowId);
  const id = newId();
  const secret = newSecret();
  const row = await db
    .insertInto('platform.workflow_hooks')
    .values({
      id,
      workspace_id: workspaceId,
      workflow_id: workflowId,
      name: h.name ?? workflow.name,
      secret_sealed: secrets.seal(secret, associated(id)),
      paused: h.paused,
      created_by: createdBy,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ...toView(row), secret };
}

/** Renames or pauses a hook; whoever changes it is from then on the user its deliveries run as. */
export async function updateHook(
  db: Db,
  workspaceId: string,
  workflowId: Uuid,
  hookId: Uuid,
  patch: v.InferOutput<typeof UpdateHookSchema>,
  changedBy: string,
): Promise<WorkflowHookView> {
  const current = await hooks.get(db, workspaceId, workflowId, hookId);
  return toView(await hooks.update(db, current.id, patch, changedBy));
}

/** A new secret, answered this once; the old one stops working at once; the hook runs as the one who rotated it. */
export async function rotateHookSecret(
  db: Db,
  secrets: SecretSealer | undefined,
  workspaceId: string,
  workflowId: Uuid,
  hookId: Uuid,
  changedBy: string,
): Promise<WorkflowHookWithSecret> {
  if (!secrets) throw noSecrets();
  const current = await hooks.get(db, workspaceId, workflowId, hookId);
  const secret = newSecret();
  const row = await hooks.update(db, current.id, {}, changedBy, { secret_sealed: secrets.seal(secret, associated(current.id)), secret_rotated_at: sql<Date>`now()` });
  return { ...toView(row), secret };
}

export async function deleteHook(db: Db, workspaceId: string, workflowId: Uuid, hookId: Uuid): Promise<WorkflowHookView> {
  return toView(await hooks.remove(db, workspaceId, workflowId, hookId));
}

/** What an unknown hook's deliveries are checked with: never a hook's secret. */
const DUMMY_SECRET = randomBytes(32).toString('hex');

/** How far a Stripe-style signature's timestamp may be from now. */
const SIGNATURE_TOLERANCE_S = 300;

const hmac = (secret: string, data: Buffer) => createHmac('sha256', secret).update(data).digest();
const HEX_MAC = /^[0-9a-fA-F]{64}$/;
const SIGNATURE_HEADERS = ['x-hub-signature-256', 'x-signature-256', 'stripe-signature'] as const;

/** A signature header parsed: the bytes its MACs cover and the MACs it offers; undefined when it is malformed. */
function parseSignature(name: (typeof SIGNATURE_HEADERS)[number], value: string, body: Buffer, now: number): { signed: Buffer; macs: Buffer[] } | undefined {
  if (name !== 'stripe-signature') {
    const m = /^sha256=([0-9a-fA-F]{64})$/.exec(value.trim());
    return m ? { signed: body, macs: [Buffer.from(m[1] as string, 'hex')] } : undefined;
  }
  // `t=<unix>,v1=<hex>[,v1=<hex>…]`: exactly one t, every part k=v, v1 always 64 hex; other schemes (v0) ignored.
  let t: string | undefined;
  const macs: Buffer[] = [];
  for (const part of value.split(',')) {
    const at = part.indexOf('=');
    if (at < 1) return undefined;
    const key = part.slice(0, at).trim();
    const val = part.slice(at + 1).trim();
    if (key === 't') {
      if (t !== undefined || !/^\d{1,12}$/.test(val)) return undefined;
      t = val;
    } else if (key === 'v1') {
      if (!HEX_MAC.test(val)) return undefined;
      macs.push(Buffer.from(val, 'hex'));
    }
  }
  if (t === undefined || macs.length === 0 || Math.abs(now / 1000 - Number(t)) > SIGNATURE_TOLERANCE_S) return undefined;
  return { signed: Buffer.concat([Buffer.from(`${t}.`), body]), macs };
}

/**
 * The MAC a delivery's signature header proves, as bytes, or undefined when it proves none. Exactly one signature
 * header is taken (two are refused, not chosen between). The MAC is what a delivery is known by: every spelling of
 * one signature (hex case, spaces, part order, extra parts) verifies to the same bytes, and a Stripe-style MAC
 * covers its `t`.
 */
export function verifySignature(secret: string, body: Buffer, header: (name: string) => string | undefined, now = Date.now()): Buffer | undefined {
  const present = SIGNATURE_HEADERS.flatMap((name) => {
    const value = header(name);
    return value === undefined ? [] : [{ name, value }];
  });
  if (present.length !== 1) return undefined;
  const { name, value } = present[0] as (typeof present)[number];
  const parsed = parseSignature(name, value, body, now);
  if (!parsed) return undefined;
  const expected = hmac(secret, parsed.signed);
  return parsed.macs.some((mac) => timingSafeEqual(expected, mac)) ? expected : undefined;
}

/** The delivery id a sender gave (GitHub's, a generic one, or an idempotency key); undefined when none. */
function deliveryIdOf(header: (name: string) => string | undefined): string | undefined {
  const id = (header('x-github-delivery') ?? header('x-delivery-id') ?? header('idempotency-key'))?.trim();
  if (id === undefined || id === '') return undefined;
  if (!/^[\x20-\x7e]{1,200}$/.test(id)) throw validationError('the delivery id header: at most 200 printable ASCII characters');
  return id;
}

/** `$input` of a delivery: its JSON, or its form fields (a repeated field as a list); 415 for anything else. */
function inputOf(body: Buffer, contentType: string | undefined): unknown {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json' || type.endsWith('+json')) {
    if (body.length === 0) return null;
    try {
      return JSON.parse(body.toString('utf8'));
    } catch {
      throw validationError('the body is not JSON');
    }
  }
  if (type === 'application/x-www-form-urlencoded') {
    const fields: Record<string, string | string[]> = Object.create(null);
    for (const [k, val] of new URLSearchParams(body.toString('utf8'))) {
      const had = fields[k];
      if (had === undefined) fields[k] = val;
      else if (Array.isArray(had)) had.push(val);
      else fields[k] = [had, val];
    }
    return { ...fields };
  }
  throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', 'A hook takes JSON or form-encoded bodies', `got ${type || 'no Content-Type'}`);
}

export interface HookDelivery {
  hookId: string;
  body: Buffer;
  contentType: string | undefined;
  header: (name: string) => string | undefined;
  /** Called once the delivery is verified, before anything is recorded (the workspace's rate limit). */
  admit?: (workspaceId: string) => void;
}

export interface DeliveryResult {
  run_id: string;
  /** `queued` for a new delivery; for a duplicate, where the first delivery's run is now. */
  status: WorkflowRunStatus;
  /** True when this delivery id was seen before: the run is the first delivery's. */
  duplicate: boolean;
  /** For the audit entry. */
  workspaceId: string;
  workflowId: string;
  deliveryId: string | undefined;
}

/**
 * deliver_workflow_hook: verifies the delivery against its hook, then (once per delivery id) records the run queued as
 * the hook's creator with the body as `$input`, and queues it. 401 for anything not signed by a live hook's secret.
 */
export async function deliverHook(deps: WorkflowJobDeps & { secrets: SecretSealer | undefined; config: { WORKFLOW_WORKSPACE_QUEUED_MAX: number } }, d: HookDelivery): Promise<DeliveryResult> {
  const { db } = deps;
  const hook = isUuid(d.hookId)
    ? await db
        .selectFrom('platform.workflow_hooks as h')
        .innerJoin('platform.workflows as w', 'w.id', 'h.workflow_id')
        .innerJoin('platform.workspaces as ws', 'ws.id', 'h.workspace_id')
        .selectAll('h')
        .where('h.id', '=', d.hookId)
        .where('w.deleted_at', 'is', null)
        .where('ws.deleted_at', 'is', null)
        .executeTakeFirst()
    : undefined;
  // One answer for no hook, a paused hook, no secrets key and a bad signature: the URL tells nobody anything.
  let secret: string | undefined;
  try {
    secret = hook && !hook.paused && deps.secrets ? deps.secrets.open(hook.secret_sealed, associated(hook.id)) : undefined;
  } catch {
    secret = undefined;
  }
  // Without a live hook the body is still hashed, so the time of the answer does not tell whether the hook exists.
  const mac = verifySignature(secret ?? DUMMY_SECRET, d.body, d.header);
  if (!hook || secret === undefined || !mac) {
    throw unauthorized('The delivery is not signed by this hook\'s secret');
  }
  d.admit?.(hook.workspace_id);
  // A delivery is known by its sender's id, and by the MAC it proved (never the header's text, which can be spelt
  // many ways): a signed delivery replayed with another spelling, another or no delivery id, or another Content-Type
  // is the same delivery. (A Stripe-style MAC covers its time: a new one each send.)
  const deliveryId = deliveryIdOf(d.header);
  const signatureKey = `mac:${mac.toString('hex')}`;
  const input = inputOf(d.body, d.contentType);
  const base = { workspaceId: hook.workspace_id, workflowId: hook.workflow_id, deliveryId };

  // Each kind of key in a namespace of its own: a sender's id never reads as a signature's.
  const keys = deliveryId !== undefined ? [`id:${deliveryId}`, signatureKey] : [signatureKey];
  const firstRun = (q: Db) =>
    q.selectFrom('platform.workflow_hook_deliveries').select('run_id').where('hook_id', '=', hook.id).where('delivery_id', 'in', keys).executeTakeFirst();

  const outcome = await db
    .transaction()
    .execute(async (tx) => {
      // A delivery already recorded (by its id or its signature) answers its run; a concurrent copy is caught below.
      const seen = await firstRun(tx);
      if (seen) return { runId: seen.run_id, duplicate: true };
      if ((await countQueuedRuns(tx, hook.workspace_id)) >= deps.config.WORKFLOW_WORKSPACE_QUEUED_MAX) {
        throw new ServiceError('TOO_MANY_REQUESTS', 'The workspace has too many workflow runs queued', 'retry the delivery later');
      }
      const runId = await queueRun(tx, {
        workflow: { id: hook.workflow_id, workspace_id: hook.workspace_id },
        input,
        executedBy: hook.created_by,
        trigger: 'webhook',
        triggerId: hook.id,
        // The delivery as it is de-duplicated (the sender's id, else the MAC): its effects' keys come from it.
        origin: runOrigin.webhook(hook.id, keys[0] as string),
      });
      for (const key of keys) {
        const inserted = await tx
          .insertInto('platform.workflow_hook_deliveries')
          .values({ hook_id: hook.id, delivery_id: key, run_id: runId })
          .onConflict((oc) => oc.doNothing())
          .returning('run_id')
          .executeTakeFirst();
        // A concurrent copy won: this transaction's run is dropped with it (rollback).
        if (!inserted) throw new DuplicateDelivery();
      }
      return { runId, duplicate: false };
    })
    .catch(async (err) => {
      if (!(err instanceof DuplicateDelivery)) throw err;
      const first = await firstRun(db);
      if (!first) throw err;
      return { runId: first.run_id, duplicate: true };
    });
  if (!outcome.duplicate) await enqueueRun(deps, outcome.runId);
  const status = outcome.duplicate
    ? ((await db.selectFrom('platform.workflow_runs').select('status').where('id', '=', outcome.runId).executeTakeFirst())?.status ?? 'queued')
    : 'queued';
  return { run_id: outcome.runId, status, duplicate: outcome.duplicate, ...base };
}

class DuplicateDelivery extends Error {}

/** Deliveries remembered longer than `olderThanMs` are forgotten (a redelivery after that runs again). */
export async function pruneHookDeliveries(db: Db, olderThanMs: number): Promise<number> {
  const r = await db
    .deleteFrom('platform.workflow_hook_deliveries')
    .where('received_at', '<', sql<Date>`now() - ${Math.max(0, Math.floor(olderThanMs))} * interval '1 millisecond'`)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
