/**
 * The versions workflow steps run (docs/automation.md#which-versions-a-run-runs), by @wds/db's rule for versioned
 * resources: a pinned step runs exactly the version it names, an unpinned one the newest of the same STF; a
 * version whose STF is gone (deleted, or never of this workspace) resolves to nothing.
 */
import { type Db, newestVersionIds, ownNewestVersionIds, resolvePinnedVersions, sql } from '@wds/db';
import type { RuntimeName } from '@wds/stf-runtime';
import type { SealedSecret } from './stfs.js';

/** What a step runs: the version, and its STF's secrets as stored (sealed), so a step costs no extra query. */
export interface StepStfVersion {
  stf_id: string;
  stf_version_id: string;
  version: string;
  runtime: RuntimeName;
  code: Buffer;
  sealed_secrets: SealedSecret[];
}

/** For each pin (a version, and whether to run exactly it), in order: the version it runs, or undefined. */
export async function resolveStepStfVersions(
  db: Db,
  workspaceId: string,
  pins: { id: string; pin: boolean }[],
): Promise<(StepStfVersion | undefined)[]> {
  const secrets = sql<{ secrets: { env_key: string; sealed_value: string }[] }>`(
    SELECT coalesce(json_agg(json_build_object('env_key', k.env_key, 'sealed_value', encode(k.sealed_value, 'base64'))), '[]')
    FROM platform.stf_secrets k WHERE k.stf_id = v.stf_id) AS secrets`;
  const rows = await resolvePinnedVersions(db, 'stf', workspaceId, pins, secrets);
  return rows.map(
    (r) =>
      r && {
        stf_id: r.stf_id,
        stf_version_id: r.id,
        version: r.version,
        runtime: r.runtime,
        code: r.code,
        sealed_secrets: r.secrets.map((k) => ({ env_key: k.env_key, sealed_value: Buffer.from(k.sealed_value, 'base64') })),
      },
  );
}

/** For each referenced version of this workspace whose STF lives: its STF's newest version (an unpinned step's). */
export const newestStfVersions = (db: Db, workspaceId: string, refs: string[]): Promise<Record<string, string>> =>
  newestVersionIds(db, 'stf', workspaceId, refs);

/**
 * For each reference (`from`: reference → a base version of this workspace): the newest version of the base's STF
 * that is the base itself or a newer one `userId` wrote. A reference whose STF is gone is left out.
 */
export const ownNewestStfVersions = (db: Db, workspaceId: string, from: Record<string, string>, userId: string | null): Promise<Record<string, string>> =>
  ownNewestVersionIds(db, 'stf', workspaceId, from, userId);
