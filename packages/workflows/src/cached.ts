/**
 * What an execution reads before it runs — the workflow, and the versions its steps run with their sealed secrets
 * — from the run cache of the process (@wds/cache TopicCache, by workspace: dropped by any change of the workspace, in every
 * process), else from the database. Without a cache (CACHE_TTL_MS 0) every execution reads them.
 */
import type { Db, Uuid } from '@wds/db';
import { freezeDeep, type TopicCache } from '@wds/cache';
import type { WorkflowDefinition } from './definition.js';
import type { ResolvedEffect, ResolvedStf } from './engine.js';
import { resolveEffectSteps, resolveStfSteps } from './resolve.js';
import { getWorkflow } from './store.js';
import type { WorkflowView } from './views.js';

export interface ResolvedSteps {
  stfs: (ResolvedStf | undefined)[];
  effects: (ResolvedEffect | undefined)[];
}

/** A live workflow of the workspace (NOT_FOUND otherwise, never cached). */
export function cachedWorkflow(db: Db, cache: TopicCache | undefined, workspaceId: string, workflowId: Uuid): Promise<WorkflowView> {
  const load = async () => freezeDeep(await getWorkflow(db, workspaceId, workflowId));
  if (!cache) return load();
  return cache.throughWorkspace(workspaceId, `workflow:${workflowId}`, load, (w) => 1024 + JSON.stringify(w).length);
}

/** The versions the steps of `def` run (resolve.ts), keyed by exactly the references the query reads. */
export function cachedSteps(
  db: Db,
  cache: TopicCache | undefined,
  workspaceId: string,
  def: Pick<WorkflowDefinition, 'stf_steps' | 'effect_steps'>,
): Promise<ResolvedSteps> {
  const load = async (): Promise<ResolvedSteps> => {
    const [stfs, effects] = await Promise.all([resolveStfSteps(db, workspaceId, def.stf_steps), resolveEffectSteps(db, workspaceId, def.effect_steps)]);
    return freezeDeep({ stfs, effects });
  };
  if (!cache) return load();
  const key = `steps:${JSON.stringify([
    def.stf_steps.map((s) => [s.stf_version_id, s.pin_version === true]),
    def.effect_steps.map((s) => [s.effect_version_id, s.pin_version === true]),
  ])}`;
  return cache.throughWorkspace(workspaceId, key, load, sizeOfSteps);
}

function sizeOfSteps(steps: ResolvedSteps): number {
  let bytes = 1024;
  for (const s of steps.stfs) if (s) bytes += 256 + s.code.length + s.sealed_secrets.reduce((n, k) => n + 64 + k.env_key.length + k.sealed_value.length, 0);
  for (const e of steps.effects) if (e) bytes += 256 + JSON.stringify(e.spec).length;
  return bytes;
}
