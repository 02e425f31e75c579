/**
 * The versions a run executes, in one query per step kind: a pinned step runs exactly its version; otherwise the
 * newest version of the same STF or effect (docs/workflows.md#definition). A step whose STF or effect is gone (deleted,
 * or never of this workspace) resolves to undefined, and the engine fails it. A run's steps come here already pinned to
 * the versions it may run (accepted.ts: what the workflow's last save accepted, or newer ones its own user wrote).
 */
import { type Db, isUuid } from '@wds/db';
import type { FieldMapping } from '@wds/effect-runner';
import { sql } from 'kysely';
import type { WorkflowDefinition } from './definition.js';
import type { ResolvedEffect, ResolvedStf } from './engine.js';

interface Ref {
  id: string;
  pin: boolean;
}

export async function resolveStfSteps(db: Db, workspaceId: string, steps: WorkflowDefinition['stf_steps']): Promise<(ResolvedStf | undefined)[]> {
  if (steps.length === 0) return [];
  const refs: Ref[] = steps.map((s) => ({ id: s.stf_version_id, pin: s.pin_version === true }));
  const { rows } = await sql<{
    step: string;
    stf_id: string;
    id: string;
    version: string;
    runtime: ResolvedStf['runtime'];
    code: Buffer;
    secrets: { env_key: string; sealed_value: string }[];
  }>`
    SELECT s.step, v.stf_id, v.id, v.version, v.runtime, v.code,
           (SELECT coalesce(json_agg(json_build_object('env_key', k.env_key, 'sealed_value', encode(k.sealed_value, 'base64'))), '[]')
            FROM platform.stf_secrets k WHERE k.stf_id = v.stf_id) AS secrets
    FROM unnest(${refs.map((r) => r.id)}::uuid[], ${refs.map((r) => r.pin)}::boolean[]) WITH ORDINALITY AS s(ref, pin, step)
    JOIN platform.stf_versions r ON r.id = s.ref AND r.workspace_id = ${workspaceId}
    JOIN platform.stfs f ON f.id = r.stf_id AND f.deleted_at IS NULL
    JOIN LATERAL (
      SELECT * FROM platform.stf_versions v
      WHERE CASE WHEN s.pin THEN v.id = r.id ELSE v.stf_id = r.stf_id END
      ORDER BY v.id DESC LIMIT 1
    ) v ON true`.execute(db);
  const out: (ResolvedStf | undefined)[] = steps.map(() => undefined);
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

export async function resolveEffectSteps(
  db: Db,
  workspaceId: string,
  steps: WorkflowDefinition['effect_steps'],
): Promise<(ResolvedEffect | undefined)[]> {
  if (steps.length === 0) return [];
  const refs: Ref[] = steps.map((s) => ({ id: s.effect_version_id, pin: s.pin_version === true }));
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
    FROM unnest(${refs.map((r) => r.id)}::uuid[], ${refs.map((r) => r.pin)}::boolean[]) WITH ORDINALITY AS s(ref, pin, step)
    JOIN platform.effect_versions r ON r.id = s.ref AND r.workspace_id = ${workspaceId}
    JOIN platform.effects e ON e.id = r.effect_id AND e.deleted_at IS NULL
    JOIN LATERAL (
      SELECT * FROM platform.effect_versions v
      WHERE CASE WHEN s.pin THEN v.id = r.id ELSE v.effect_id = r.effect_id END
      ORDER BY v.id DESC LIMIT 1
    ) v ON true`.execute(db);
  const out: (ResolvedEffect | undefined)[] = steps.map(() => undefined);
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

const VERSIONS = {
  stf: { versions: 'platform.stf_versions', parent: 'platform.stfs', key: 'stf_id' },
  effect: { versions: 'platform.effect_versions', parent: 'platform.effects', key: 'effect_id' },
} as const;

/**
 * For each referenced version of this workspace whose STF (or effect) lives: the newest version of that STF, by the
 * rule unpinned steps resolve with above. What accepting a workflow's steps records (accepted.ts).
 */
export async function newestVersions(db: Db, kind: keyof typeof VERSIONS, workspaceId: string, refs: string[]): Promise<Record<string, string>> {
  const wanted = [...new Set(refs.filter(isUuid))];
  if (wanted.length === 0) return {};
  const t = VERSIONS[kind];
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
 * For each referenced version (`from`: reference → the version accepted for it): the newest version of its STF (or
 * effect) that is that accepted one or a newer one `userId` wrote. A reference whose STF is gone is left out (it runs
 * as named, and fails there).
 */
export async function ownNewestVersions(db: Db, kind: keyof typeof VERSIONS, workspaceId: string, from: Record<string, string>, userId: string | null): Promise<Record<string, string>> {
  const refs = Object.keys(from).filter((r) => isUuid(r) && isUuid(from[r] as string));
  if (refs.length === 0) return {};
  const t = VERSIONS[kind];
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
