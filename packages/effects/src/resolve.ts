/**
 * The versions workflow steps run (docs/automation.md#which-versions-a-run-runs), by @wds/db's rule for versioned
 * resources: a pinned step runs exactly the version it names, an unpinned one the newest of the same effect; a
 * version whose effect is gone (deleted, or never of this workspace) resolves to nothing.
 */
import { type Db, newestVersionIds, ownNewestVersionIds, resolvePinnedVersions } from '@wds/db';
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
  const rows = await resolvePinnedVersions(db, 'effect', workspaceId, pins);
  return rows.map(
    (r) =>
      r && {
        effect_id: r.effect_id,
        effect_version_id: r.id,
        version: r.version,
        spec: {
          url: r.url,
          method: r.method,
          header_mappings: r.header_mappings as FieldMapping[],
          body_mappings: r.body_mappings as FieldMapping[],
          query_mappings: r.query_mappings as FieldMapping[],
          timeout_secs: r.timeout_secs,
          retries: r.retries,
        },
      },
  );
}

/** For each referenced version of this workspace whose effect lives: its effect's newest version (an unpinned step's). */
export const newestEffectVersions = (db: Db, workspaceId: string, refs: string[]): Promise<Record<string, string>> =>
  newestVersionIds(db, 'effect', workspaceId, refs);

/**
 * For each reference (`from`: reference → a base version of this workspace): the newest version of the base's
 * effect that is the base itself or a newer one `userId` wrote. A reference whose effect is gone is left out.
 */
export const ownNewestEffectVersions = (
  db: Db,
  workspaceId: string,
  from: Record<string, string>,
  userId: string | null,
): Promise<Record<string, string>> => ownNewestVersionIds(db, 'effect', workspaceId, from, userId);
