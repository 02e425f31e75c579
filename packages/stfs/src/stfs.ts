import { type Db, type StfRow, type StfVersionRow, isUuid, newId, sql, type Uuid } from '@wds/db';
import { conflict, notFound } from '@wds/errors';
import type { RuntimeName } from '@wds/stf-runtime';
import type { StfVersionView, StfView } from './views.js';

export interface NewVersion {
  version: string;
  runtime: RuntimeName;
  code: Buffer;
  input_schema?: unknown;
  output_schema?: unknown;
}

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

export const toVersionView = (v: StfVersionRow): StfVersionView => ({
  id: v.id,
  stf_id: v.stf_id,
  version: v.version,
  runtime: v.runtime,
  code: v.code.toString('base64'),
  input_schema: v.input_schema ?? null,
  output_schema: v.output_schema ?? null,
  created_at: v.created_at.toISOString(),
});

function stfQuery(db: Db, workspaceId: string) {
  return db
    .selectFrom('platform.stfs as s')
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('platform.stf_versions as v')
          .select(['v.id as version_id', 'v.version', 'v.runtime'])
          .whereRef('v.stf_id', '=', 's.id')
          .orderBy('v.id', 'desc')
          .limit(1)
          .as('lv'),
      (join) => join.onTrue(),
    )
    .selectAll('s')
    .select(['lv.version_id', 'lv.version', 'lv.runtime'])
    .where('s.workspace_id', '=', workspaceId)
    .where('s.deleted_at', 'is', null);
}

type StfWithLatest = StfRow & { version_id: string | null; version: string | null; runtime: RuntimeName | null };

const toView = (s: StfWithLatest): StfView => ({
  id: s.id,
  workspace_id: s.workspace_id,
  name: s.name,
  description: s.description,
  is_public: s.is_public,
  latest_version: s.version_id && s.version && s.runtime ? { id: s.version_id, version: s.version, runtime: s.runtime } : null,
  created_at: s.created_at.toISOString(),
  updated_at: s.updated_at.toISOString(),
});

export async function listStfs(db: Db, workspaceId: string, page: { limit: number; offset: number }): Promise<StfView[]> {
  const rows = await stfQuery(db, workspaceId).orderBy('s.id').limit(page.limit).offset(page.offset).execute();
  return rows.map(toView);
}

export async function getStf(db: Db, workspaceId: string, id: Uuid): Promise<StfView> {
  const row = await stfQuery(db, workspaceId).where('s.id', '=', id).executeTakeFirst();
  if (!row) throw notFound('STF');
  return toView(row);
}

/** Creates the STF with its first version, in the caller's transaction. */
export async function createStf(
  db: Db,
  workspaceId: string,
  input: { name: string; description?: string | null; is_public?: boolean; createdBy: string | null; version: NewVersion },
): Promise<{ stf: StfView; version: StfVersionView }> {
  const id = newId();
  await db
    .insertInto('platform.stfs')
    .values({
      id,
      workspace_id: workspaceId,
      name: input.name,
      description: input.description ?? null,
      is_public: input.is_public ?? false,
      created_by: input.createdBy,
    })
    .execute();
  const version = await addVersion(db, workspaceId, id, input.version, input.createdBy);
  return { stf: await getStf(db, workspaceId, id), version };
}

export async function updateStf(
  db: Db,
  workspaceId: string,
  id: Uuid,
  patch: { name?: string | undefined; description?: string | null | undefined; is_public?: boolean | undefined },
): Promise<StfView> {
  await getStf(db, workspaceId, id);
  const values = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  await db.updateTable('platform.stfs').set({ ...values, updated_at: new Date() }).where('id', '=', id).execute();
  return getStf(db, workspaceId, id);
}

export async function softDeleteStf(db: Db, workspaceId: string, id: Uuid): Promise<StfView> {
  const stf = await getStf(db, workspaceId, id);
  await db.updateTable('platform.stfs').set({ deleted_at: new Date() }).where('id', '=', id).execute();
  return stf;
}

export async function addVersion(
  db: Db,
  workspaceId: string,
  stfId: Uuid,
  v: NewVersion,
  createdBy: string | null,
): Promise<StfVersionView> {
  await getStf(db, workspaceId, stfId);
  const row = await db
    .insertInto('platform.stf_versions')
    .values({
      id: newId(),
      stf_id: stfId,
      workspace_id: workspaceId,
      version: v.version,
      runtime: v.runtime,
      code: v.code,
      input_schema: json(v.input_schema),
      output_schema: json(v.output_schema),
      created_by: createdBy,
    })
    .onConflict((oc) => oc.columns(['stf_id', 'version']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw conflict(`Version ${JSON.stringify(v.version)} of this STF already exists`);
  return toVersionView(row);
}

/** Newest first. */
export async function listVersions(db: Db, workspaceId: string, stfId: Uuid, page: { limit: number; offset: number }) {
  await getStf(db, workspaceId, stfId);
  const rows = await db
    .selectFrom('platform.stf_versions')
    .selectAll()
    .where('stf_id', '=', stfId)
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(toVersionView);
}

/** Which version: by its id, or by label (else the newest) of an STF. */
export interface VersionRef {
  stfVersionId?: string | undefined;
  stfId?: string | undefined;
  label?: string | undefined;
}

/** The query of a version of a live STF of the workspace (NOT_FOUND for a reference that cannot name one). */
function versionQuery(db: Db, workspaceId: string, ref: VersionRef) {
  let q = db
    .selectFrom('platform.stf_versions as v')
    .innerJoin('platform.stfs as s', 's.id', 'v.stf_id')
    .selectAll('v')
    .where('v.workspace_id', '=', workspaceId)
    .where('s.deleted_at', 'is', null);
  if (ref.stfVersionId !== undefined) {
    if (!isUuid(ref.stfVersionId)) throw notFound('STF version');
    q = q.where('v.id', '=', ref.stfVersionId);
  } else if (ref.stfId !== undefined && isUuid(ref.stfId)) {
    q = q.where('v.stf_id', '=', ref.stfId);
    q = ref.label !== undefined ? q.where('v.version', '=', ref.label) : q.orderBy('v.id', 'desc').limit(1);
  } else {
    throw notFound('STF');
  }
  return q;
}

const versionNotFound = (ref: VersionRef) => notFound(ref.stfVersionId !== undefined || ref.label !== undefined ? 'STF version' : 'STF');

/** A version of a live STF of the workspace: by its id, or by label (else the newest) of an STF. */
export async function resolveVersion(db: Db, workspaceId: string, ref: VersionRef): Promise<StfVersionRow> {
  const row = await versionQuery(db, workspaceId, ref).executeTakeFirst();
  if (!row) throw versionNotFound(ref);
  return row;
}

/** A secret of an STF as stored: sealed, opened only for a run (secrets.ts openSealedSecrets). */
export interface SealedSecret {
  env_key: string;
  sealed_value: Buffer;
}

/** What running a version reads of the platform tables: the version and its STF's sealed secrets. */
export interface StfVersionWithSecrets {
  version: StfVersionRow;
  sealed_secrets: SealedSecret[];
}

/** resolveVersion and the STF's sealed secrets, in one query. */
export async function loadVersionWithSecrets(db: Db, workspaceId: string, ref: VersionRef): Promise<StfVersionWithSecrets> {
  const row = await versionQuery(db, workspaceId, ref)
    .select(
      sql<{ env_key: string; sealed_value: string }[]>`(SELECT coalesce(json_agg(json_build_object('env_key', k.env_key, 'sealed_value', encode(k.sealed_value, 'base64'))), '[]')
        FROM platform.stf_secrets k WHERE k.stf_id = v.stf_id)`.as('sealed_secrets'),
    )
    .executeTakeFirst();
  if (!row) throw versionNotFound(ref);
  const { sealed_secrets, ...version } = row;
  return { version, sealed_secrets: sealed_secrets.map((k) => ({ env_key: k.env_key, sealed_value: Buffer.from(k.sealed_value, 'base64') })) };
}
