/**
 * How a versioned resource (an STF, an effect) resolves a version, one rule for both: a version id names exactly
 * itself (`pin`), or its resource's newest version — the highest id (ids are UUIDv7, in the order they were added).
 * Only a version of the workspace whose resource lives (not soft-deleted) resolves; anything else resolves to
 * nothing. @wds/stfs and @wds/effects export these for their own tables; nothing else reads the versions tables.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Db } from './connect.js';
import { isUuid } from './ids.js';
import type { EffectVersionRow, StfVersionRow } from './schema.js';

const VERSIONED = {
  stf: { versions: 'platform.stf_versions', parent: 'platform.stfs', key: 'stf_id' },
  effect: { versions: 'platform.effect_versions', parent: 'platform.effects', key: 'effect_id' },
} as const;
export type VersionedKind = keyof typeof VERSIONED;
type VersionRowOf<K extends VersionedKind> = K extends 'stf' ? StfVersionRow : EffectVersionRow;

/**
 * For each pin, in order: the version it resolves to (`v.*`, and the columns `extra` selects, which may refer to
 * the version as `v`), or undefined.
 */
export async function resolvePinnedVersions<K extends VersionedKind, E extends object = object>(
  db: Db,
  kind: K,
  workspaceId: string,
  pins: { id: string; pin: boolean }[],
  extra?: RawBuilder<E>,
): Promise<((VersionRowOf<K> & E) | undefined)[]> {
  if (pins.length === 0) return [];
  const t = VERSIONED[kind];
  const { rows } = await sql<VersionRowOf<K> & E & { step: string }>`
    SELECT s.step, v.*${extra ? sql`, ${extra}` : sql``}
    FROM unnest(${pins.map((r) => r.id)}::uuid[], ${pins.map((r) => r.pin)}::boolean[]) WITH ORDINALITY AS s(ref, pin, step)
    JOIN ${sql.table(t.versions)} r ON r.id = s.ref AND r.workspace_id = ${workspaceId}
    JOIN ${sql.table(t.parent)} p ON p.id = ${sql.ref(`r.${t.key}`)} AND p.deleted_at IS NULL
    JOIN LATERAL (
      SELECT * FROM ${sql.table(t.versions)} v
      WHERE CASE WHEN s.pin THEN v.id = r.id ELSE ${sql.ref(`v.${t.key}`)} = ${sql.ref(`r.${t.key}`)} END
      ORDER BY v.id DESC LIMIT 1
    ) v ON true`.execute(db);
  const out: ((VersionRowOf<K> & E) | undefined)[] = pins.map(() => undefined);
  for (const { step, ...row } of rows) out[Number(step) - 1] = row as unknown as VersionRowOf<K> & E;
  return out;
}

/** For each referenced version that resolves: reference → its resource's newest version. */
export async function newestVersionIds(db: Db, kind: VersionedKind, workspaceId: string, refs: string[]): Promise<Record<string, string>> {
  const wanted = [...new Set(refs.filter(isUuid))];
  if (wanted.length === 0) return {};
  const t = VERSIONED[kind];
  const { rows } = await sql<{ ref: string; newest: string }>`
    SELECT r.id AS ref, n.id AS newest
    FROM ${sql.table(t.versions)} r
    JOIN ${sql.table(t.parent)} p ON p.id = ${sql.ref(`r.${t.key}`)} AND p.deleted_at IS NULL
    JOIN LATERAL (
      SELECT v.id FROM ${sql.table(t.versions)} v WHERE ${sql.ref(`v.${t.key}`)} = ${sql.ref(`r.${t.key}`)} ORDER BY v.id DESC LIMIT 1
    ) n ON true
    WHERE r.workspace_id = ${workspaceId} AND r.id = ANY(${wanted}::uuid[])`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.ref, r.newest]));
}

/**
 * For each reference (`from`: reference → a base version of this workspace): the newest version of the base's
 * resource that is the base itself or a newer one `userId` wrote. A reference whose resource is gone is left out.
 */
export async function ownNewestVersionIds(
  db: Db,
  kind: VersionedKind,
  workspaceId: string,
  from: Record<string, string>,
  userId: string | null,
): Promise<Record<string, string>> {
  const refs = Object.keys(from).filter((r) => isUuid(r) && isUuid(from[r] as string));
  if (refs.length === 0) return {};
  const t = VERSIONED[kind];
  const { rows } = await sql<{ ref: string; chosen: string }>`
    SELECT s.ref, n.id AS chosen
    FROM unnest(${refs}::uuid[], ${refs.map((r) => from[r])}::uuid[]) AS s(ref, base)
    JOIN ${sql.table(t.versions)} b ON b.id = s.base AND b.workspace_id = ${workspaceId}
    JOIN ${sql.table(t.parent)} p ON p.id = ${sql.ref(`b.${t.key}`)} AND p.deleted_at IS NULL
    JOIN LATERAL (
      SELECT v.id FROM ${sql.table(t.versions)} v
      WHERE ${sql.ref(`v.${t.key}`)} = ${sql.ref(`b.${t.key}`)} AND (v.id = b.id OR (v.id > b.id AND v.created_by = ${userId}::uuid))
      ORDER BY v.id DESC LIMIT 1
    ) n ON true`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.ref, r.chosen]));
}
