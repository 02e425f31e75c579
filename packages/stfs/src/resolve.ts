/**
 * The versions workflow steps run, in one query each: a pinned step runs exactly the version it names; otherwise the
 * newest version of the same STF (docs/automation.md#which-versions-a-run-runs). A version whose STF is gone
 * (deleted, or never of this workspace) resolves to nothing. Newest is the highest id (ids are UUIDv7).
 */
import { type Db, isUuid, sql } from '@wds/db';
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
  if (pins.length === 0) return [];
  const { rows } = await sql<{
    step: string;
    stf_id: string;
    id: string;
    version: string;
    runtime: RuntimeName;
    code: Buffer;
    secrets: { env_key: string; sealed_value: string }[];
  }>`
    SELECT s.step, v.stf_id, v.id, v.version, v.runtime, v.code,
           (SELECT coalesce(json_agg(json_build_object('env_key', k.env_key, 'sealed_value', encode(k.sealed_value, 'base64'))), '[]')
            FROM platform.stf_secrets k WHERE k.stf_id = v.stf_id) AS secrets
    FROM unnest(${pins.map((r) => r.id)}::uuid[], ${pins.map((r) => r.pin)}::boolean[]) WITH ORDINALITY AS s(ref, pin, step)
    JOIN platform.stf_versions r ON r.id = s.ref AND r.workspace_id = ${workspaceId}
    JOIN platform.stfs f ON f.id = r.stf_id AND f.deleted_at IS NULL
    JOIN LATERAL (
      SELECT * FROM platform.stf_versions v
      WHERE CASE WHEN s.pin THEN v.id = r.id ELSE v.stf_id = r.stf_id END
      ORDER BY v.id DESC LIMIT 1
    ) v ON true`.execute(db);
  const out: (StepStfVersion | undefined)[] = pins.map(() => undefined);
  for (const r of rows) {
    out[Number(r.step) - 1] = {
      stf_id: r.stf_id,
      stf_version_id: r.id,
      version: r.version,
      runtime: r.runtime,
      code: r.code,
      sealed_secrets: r.secrets.map((k) => ({ env_key: k.env_key, sealed_value: Buffer.from(k.sealed_value, 'base64') })),
    };
  }
  return out;
}

/**
 * For each referenced version of this workspace whose STF lives: the newest version of that STF (what an unpinned
 * step resolves to). A reference that is no such version is left out.
 */
export async function newestStfVersions(db: Db, workspaceId: string, refs: string[]): Promise<Record<string, string>> {
  const wanted = [...new Set(refs.filter(isUuid))];
  if (wanted.length === 0) return {};
  const { rows } = await sql<{ ref: string; newest: string }>`
    SELECT r.id AS ref, n.id AS newest
    FROM platform.stf_versions r
    JOIN platform.stfs p ON p.id = r.stf_id AND p.deleted_at IS NULL
    JOIN LATERAL (SELECT v.id FROM platform.stf_versions v WHERE v.stf_id = r.stf_id ORDER BY v.id DESC LIMIT 1) n ON true
    WHERE r.workspace_id = ${workspaceId} AND r.id = ANY(${wanted}::uuid[])`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.ref, r.newest]));
}

/**
 * For each reference (`from`: reference → a base version of this workspace): the newest version of the base's STF
 * that is the base itself or a newer one `userId` wrote. A reference whose STF is gone is left out.
 */
export async function ownNewestStfVersions(db: Db, workspaceId: string, from: Record<string, string>, userId: string | null): Promise<Record<string, string>> {
  const refs = Object.keys(from).filter((r) => isUuid(r) && isUuid(from[r] as string));
  if (refs.length === 0) return {};
  const { rows } = await sql<{ ref: string; chosen: string }>`
    SELECT s.ref, n.id AS chosen
    FROM unnest(${refs}::uuid[], ${refs.map((r) => from[r])}::uuid[]) AS s(ref, base)
    JOIN platform.stf_versions b ON b.id = s.base AND b.workspace_id = ${workspaceId}
    JOIN platform.stfs p ON p.id = b.stf_id AND p.deleted_at IS NULL
    JOIN LATERAL (
      SELECT v.id FROM platform.stf_versions v
      WHERE v.stf_id = b.stf_id AND (v.id = b.id OR (v.id > b.id AND v.created_by = ${userId}::uuid))
      ORDER BY v.id DESC LIMIT 1
    ) n ON true`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.ref, r.chosen]));
}
