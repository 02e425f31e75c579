/**
 * The versions workflow steps run, in one query each: a pinned step runs exactly the version it names; otherwise the
 * newest version of the same effect (docs/automation.md#which-versions-a-run-runs). A version whose effect is gone
 * (deleted, or never of this workspace) resolves to nothing. Newest is the highest id (ids are UUIDv7).
 */
import { type Db, isUuid, sql } from '@wds/db';
import type { EffectSpec, FieldMapping } from '@wds/effect-runner';

/** What a step runs: the version and its call. */
export interface StepEffectVersion {
  effect_id: string;
  effect_version_id: string;
  version: string;
  spec: EffectSpec;
}

/** For each pin (a version, and whether to run exactly it), in order: the version it runs, or undefined. */
export async function resolveStepEffectVersions(
  db: Db,
  workspaceId: string,
  pins: { id: string; pin: boolean }[],
): Promise<(StepEffectVersion | undefined)[]> {
  if (pins.length === 0) return [];
  const { rows } = await sql<{
    step: string;
    effect_id: string;
    id: string;
    version: string;
    url: string;
    method: string;
    header_mappings: FieldMapping[];
    body_mappings: FieldMapping[];
    query_mappings: FieldMapping[];
    timeout_secs: number | null;
    retries: number;
  }>`
    SELECT s.step, v.effect_id, v.id, v.version, v.url, v.method, v.header_mappings, v.body_mappings, v.query_mappings,
           v.timeout_secs, v.retries
    FROM unnest(${pins.map((r) => r.id)}::uuid[], ${pins.map((r) => r.pin)}::boolean[]) WITH ORDINALITY AS s(ref, pin, step)
    JOIN platform.effect_versions r ON r.id = s.ref AND r.workspace_id = ${workspaceId}
    JOIN platform.effects e ON e.id = r.effect_id AND e.deleted_at IS NULL
    JOIN LATERAL (
      SELECT * FROM platform.effect_versions v
      WHERE CASE WHEN s.pin THEN v.id = r.id ELSE v.effect_id = r.effect_id END
      ORDER BY v.id DESC LIMIT 1
    ) v ON true`.execute(db);
  const out: (StepEffectVersion | undefined)[] = pins.map(() => undefined);
  for (const r of rows) {
    out[Number(r.step) - 1] = {
      effect_id: r.effect_id,
      effect_version_id: r.id,
      version: r.version,
      spec: {
        url: r.url,
        method: r.method,
        header_mappings: r.header_mappings,
        body_mappings: r.body_mappings,
        query_mappings: r.query_mappings,
        timeout_secs: r.timeout_secs,
        retries: r.retries,
      },
    };
  }
  return out;
}

/**
 * For each referenced version of this workspace whose effect lives: the newest version of that effect (what an
 * unpinned step resolves to). A reference that is no such version is left out.
 */
export async function newestEffectVersions(db: Db, workspaceId: string, refs: string[]): Promise<Record<string, string>> {
  const wanted = [...new Set(refs.filter(isUuid))];
  if (wanted.length === 0) return {};
  const { rows } = await sql<{ ref: string; newest: string }>`
    SELECT r.id AS ref, n.id AS newest
    FROM platform.effect_versions r
    JOIN platform.effects p ON p.id = r.effect_id AND p.deleted_at IS NULL
    JOIN LATERAL (SELECT v.id FROM platform.effect_versions v WHERE v.effect_id = r.effect_id ORDER BY v.id DESC LIMIT 1) n ON true
    WHERE r.workspace_id = ${workspaceId} AND r.id = ANY(${wanted}::uuid[])`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.ref, r.newest]));
}

/**
 * For each reference (`from`: reference → a base version of this workspace): the newest version of the base's
 * effect that is the base itself or a newer one `userId` wrote. A reference whose effect is gone is left out.
 */
export async function ownNewestEffectVersions(
  db: Db,
  workspaceId: string,
  from: Record<string, string>,
  userId: string | null,
): Promise<Record<string, string>> {
  const refs = Object.keys(from).filter((r) => isUuid(r) && isUuid(from[r] as string));
  if (refs.length === 0) return {};
  const { rows } = await sql<{ ref: string; chosen: string }>`
    SELECT s.ref, n.id AS chosen
    FROM unnest(${refs}::uuid[], ${refs.map((r) => from[r])}::uuid[]) AS s(ref, base)
    JOIN platform.effect_versions b ON b.id = s.base AND b.workspace_id = ${workspaceId}
    JOIN platform.effects p ON p.id = b.effect_id AND p.deleted_at IS NULL
    JOIN LATERAL (
      SELECT v.id FROM platform.effect_versions v
      WHERE v.effect_id = b.effect_id AND (v.id = b.id OR (v.id > b.id AND v.created_by = ${userId}::uuid))
      ORDER BY v.id DESC LIMIT 1
    ) n ON true`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.ref, r.chosen]));
}
