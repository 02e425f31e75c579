/**
 * The versions a run executes (@wds/stfs and @wds/effects resolve them, in one query per step kind): a pinned step
 * runs exactly its version; otherwise the newest version of the same STF or effect (docs/workflows.md#definition). A
 * step whose STF or effect is gone (deleted, or never of this workspace) resolves to undefined, and the engine fails
 * it. A run's steps come here already pinned to the versions it may run (accepted.ts: what the workflow's last save
 * accepted, or newer ones its own user wrote).
 */
import type { Db } from '@wds/db';
import { newestEffectVersions, ownNewestEffectVersions, resolveStepEffectVersions } from '@wds/effects';
import { newestStfVersions, ownNewestStfVersions, resolveStepStfVersions } from '@wds/stfs';
import type { WorkflowDefinition } from './definition.js';
import type { ResolvedEffect, ResolvedStf } from './engine.js';

export function resolveStfSteps(db: Db, workspaceId: string, steps: WorkflowDefinition['stf_steps']): Promise<(ResolvedStf | undefined)[]> {
  return resolveStepStfVersions(db, workspaceId, steps.map((s) => ({ id: s.stf_version_id, pin: s.pin_version === true })));
}

export function resolveEffectSteps(db: Db, workspaceId: string, steps: WorkflowDefinition['effect_steps']): Promise<(ResolvedEffect | undefined)[]> {
  return resolveStepEffectVersions(db, workspaceId, steps.map((s) => ({ id: s.effect_version_id, pin: s.pin_version === true })));
}

type VersionKind = 'stf' | 'effect';

/**
 * For each referenced version of this workspace whose STF (or effect) lives: the newest version of that STF, by the
 * rule unpinned steps resolve with above. What accepting a workflow's steps records (accepted.ts).
 */
export function newestVersions(db: Db, kind: VersionKind, workspaceId: string, refs: string[]): Promise<Record<string, string>> {
  return kind === 'stf' ? newestStfVersions(db, workspaceId, refs) : newestEffectVersions(db, workspaceId, refs);
}

/**
 * For each referenced version (`from`: reference → the version accepted for it): the newest version of its STF (or
 * effect) that is that accepted one or a newer one `userId` wrote. A reference whose STF is gone is left out (it runs
 * as named, and fails there).
 */
export function ownNewestVersions(db: Db, kind: VersionKind, workspaceId: string, from: Record<string, string>, userId: string | null): Promise<Record<string, string>> {
  return kind === 'stf' ? ownNewestStfVersions(db, workspaceId, from, userId) : ownNewestEffectVersions(db, workspaceId, from, userId);
}
