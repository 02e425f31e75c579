import { type Db, type EffectRow, type EffectVersionRow, isUuid, newId, type Uuid } from '@wds/db';
import { conflict, notFound } from '@wds/errors';

/** Where a value comes from: a path into the effect's input (`Variable`) or a literal JSON value (`Const`). */
export type { FieldMapping } from '@wds/effect-runner';
import type { FieldMapping } from '@wds/effect-runner';
import type { EffectVersionView, EffectView } from './views.js';

/** One HTTP call definition; checked by the caller (`validateEffectSpec` of @wds/effect-runner) before it is stored. */
export interface NewEffectVersion {
  version: string;
  url: string;
  method: string;
  header_mappings: FieldMapping[];
  body_mappings: FieldMapping[];
  query_mappings?: FieldMapping[] | undefined;
  input_schema?: unknown;
  timeout_secs?: number | null | undefined;
  retries?: number | undefined;
}

type Page = { limit: number; offset: number };

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
const mappings = (v: unknown): FieldMapping[] => (Array.isArray(v) ? (v as FieldMapping[]) : []);

export const toEffectVersionView = (v: EffectVersionRow): EffectVersionView => ({
  id: v.id,
  effect_id: v.effect_id,
  version: v.version,
  url: v.url,
  method: v.method,
  header_mappings: mappings(v.header_mappings),
  body_mappings: mappings(v.body_mappings),
  query_mappings: mappings(v.query_mappings),
  input_schema: v.input_schema ?? null,
  timeout_secs: v.timeout_secs,
  retries: v.retries,
  created_at: v.created_at.toISOString(),
});

function effectQuery(db: Db, workspaceId: string) {
  return db
    .selectFrom('platform.effects as e')
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('platform.effect_versions as v')
          .select(['v.id as version_id', 'v.version', 'v.method', 'v.url'])
          .whereRef('v.effect_id', '=', 'e.id')
          .orderBy('v.id', 'desc')
          .limit(1)
          .as('lv'),
      (join) => join.onTrue(),
    )
    .selectAll('e')
    .select(['lv.version_id', 'lv.version', 'lv.method', 'lv.url'])
    .where('e.workspace_id', '=', workspaceId)
    .where('e.deleted_at', 'is', null);
}

type EffectWithLatest = EffectRow & { version_id: string | null; version: string | null; method: string | null; url: string | null };

const toView = (e: EffectWithLatest): EffectView => ({
  id: e.id,
  workspace_id: e.workspace_id,
  name: e.name,
  description: e.description,
  latest_version:
    e.version_id && e.version !== null && e.method !== null && e.url !== null
      ? { id: e.version_id, version: e.version, method: e.method, url: e.url }
      : null,
  created_at: e.created_at.toISOString(),
  updated_at: e.updated_at.toISOString(),
});

/** Live effects of the workspace, in creation order, each with its newest version. */
export async function listEffects(db: Db, workspaceId: string, page: Page): Promise<EffectView[]> {
  const rows = await effectQuery(db, workspaceId).orderBy('e.id').limit(page.limit).offset(page.offset).execute();
  return rows.map(toView);
}

/** A live effect of the workspace; NOT_FOUND for a deleted one or another workspace's. */
export async function getEffect(db: Db, workspaceId: string, id: Uuid): Promise<EffectView> {
  const row = await effectQuery(db, workspaceId).where('e.id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Effect');
  return toView(row);
}

/** Creates the effect with its first version, in the caller's transaction. */
export async function createEffect(
  db: Db,
  workspaceId: string,
  input: { name: string; description?: string | null | undefined; createdBy: string | null; version: NewEffectVersion },
): Promise<{ effect: EffectView; version: EffectVersionView }> {
  const id = newId();
  await db
    .insertInto('platform.effects')
    .values({
      id,
      workspace_id: workspaceId,
      name: input.name,
      description: input.description ?? null,
      created_by: input.createdBy,
    })
    .execute();
  const version = await addEffectVersion(db, workspaceId, id, input.version, input.createdBy);
  return { effect: await getEffect(db, workspaceId, id), version };
}

/** Changes the name or description; the call definition changes by adding a version. */
export async function updateEffect(
  db: Db,
  workspaceId: string,
  id: Uuid,
  patch: { name?: string | undefined; description?: string | null | undefined },
): Promise<EffectView> {
  await getEffect(db, workspaceId, id);
  const values: { name?: string; description?: string | null } = {};
  if (patch.name !== undefined) values.name = patch.name;
  if (patch.description !== undefined) values.description = patch.description;
  await db
    .updateTable('platform.effects')
    .set({ ...values, updated_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .execute();
  return getEffect(db, workspaceId, id);
}

/** Marks the effect deleted: it is no longer listed, read, changed or resolved. Returns it as it was. */
export async function softDeleteEffect(db: Db, workspaceId: string, id: Uuid): Promise<EffectView> {
  const effect = await getEffect(db, workspaceId, id);
  await db
    .updateTable('platform.effects')
    .set({ deleted_at: new Date() })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .execute();
  return effect;
}

/** Adds a version; 409 CONFLICT when the label is already used for this effect. */
export async function addEffectVersion(
  db: Db,
  workspaceId: string,
  effectId: Uuid,
  v: NewEffectVersion,
  createdBy: string | null,
): Promise<EffectVersionView> {
  await getEffect(db, workspaceId, effectId);
  const row = await db
    .insertInto('platform.effect_versions')
    .values({
      id: newId(),
      effect_id: effectId,
      workspace_id: workspaceId,
      version: v.version,
      url: v.url,
      method: v.method,
      header_mappings: JSON.stringify(v.header_mappings),
      body_mappings: JSON.stringify(v.body_mappings),
      query_mappings: JSON.stringify(v.query_mappings ?? []),
      input_schema: json(v.input_schema),
      timeout_secs: v.timeout_secs ?? null,
      retries: v.retries ?? 0,
      created_by: createdBy,
    })
    .onConflict((oc) => oc.columns(['effect_id', 'version']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw conflict(`Version ${JSON.stringify(v.version)} of this effect already exists`);
  return toEffectVersionView(row);
}

/** Versions of a live effect, newest first. */
export async function listEffectVersions(db: Db, workspaceId: string, effectId: Uuid, page: Page): Promise<EffectVersionView[]> {
  await getEffect(db, workspaceId, effectId);
  const rows = await db
    .selectFrom('platform.effect_versions')
    .selectAll()
    .where('effect_id', '=', effectId)
    .where('workspace_id', '=', workspaceId)
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(toEffectVersionView);
}

export type EffectVersionRef = { effectVersionId: string } | { effectId: string; label?: string | undefined };

/**
 * A version of a live effect of the workspace: by its id, or by label (else the newest) of an effect. NOT_FOUND for
 * another workspace's versions and for those of a deleted effect (what the workflow engine pins and runs).
 */
export async function resolveEffectVersion(db: Db, workspaceId: string, ref: EffectVersionRef): Promise<EffectVersionView> {
  let q = db
    .selectFrom('platform.effect_versions as v')
    .innerJoin('platform.effects as e', 'e.id', 'v.effect_id')
    .selectAll('v')
    .where('v.workspace_id', '=', workspaceId)
    .where('e.workspace_id', '=', workspaceId)
    .where('e.deleted_at', 'is', null);
  let missing: string;
  if ('effectVersionId' in ref) {
    if (!isUuid(ref.effectVersionId)) throw notFound('Effect version');
    q = q.where('v.id', '=', ref.effectVersionId);
    missing = 'Effect version';
  } else {
    if (!isUuid(ref.effectId)) throw notFound('Effect');
    q = q.where('v.effect_id', '=', ref.effectId);
    if (ref.label !== undefined) {
      q = q.where('v.version', '=', ref.label);
      missing = 'Effect version';
    } else {
      q = q.orderBy('v.id', 'desc').limit(1);
      missing = 'Effect';
    }
  }
  const row = await q.executeTakeFirst();
  if (!row) throw notFound(missing);
  return toEffectVersionView(row);
}
