import { openSealedSecrets, runCacheOf, runnableVersion } from '@wds/stfs';
import type { StfRunnerDeps } from './deps.js';
import { type RunAnswer, type RunnableVersion, type RunWorkspace, runAsUser } from './run.js';

/** What instant-run ran (for its audit entry) and what it answers. */
export interface InstantRun {
  version: { id: string; stf_id: string; version: string; runtime: RunnableVersion['runtime'] };
  answer: RunAnswer;
}

/**
 * instant_run_stf: a version (by id, or the newest of an STF) run without a workflow, as the user — its sql()
 * calls see what the user's policies allow, and commit when the run succeeds. The version and its STF's secrets
 * are one query, or none when the run cache has them.
 */
export async function instantRun(
  deps: StfRunnerDeps,
  req: {
    workspace: RunWorkspace;
    userId: string;
    stfVersionId?: string | undefined;
    stfId?: string | undefined;
    input: unknown;
    sources: Record<string, unknown>;
    /**
     * Records the run (its audit entry): started once the runtime has the run, so that the write overlaps it, and
     * finished before the answer (runStf's onStart). A refused run (429, 503) is not recorded.
     */
    record?: (version: InstantRun['version']) => Promise<void>;
  },
): Promise<InstantRun> {
  const { version, sealed_secrets } = await runnableVersion(deps.db, runCacheOf(deps), req.workspace.id, {
    stfVersionId: req.stfVersionId,
    stfId: req.stfId,
  });
  const secrets = deps.secrets ? openSealedSecrets(deps.secrets, version.stf_id, sealed_secrets) : {};
  const ran = { id: version.id, stf_id: version.stf_id, version: version.version, runtime: version.runtime };
  const { record } = req;
  const answer = await runAsUser(deps, {
    workspace: req.workspace,
    userId: req.userId,
    version,
    input: req.input,
    sources: req.sources,
    secrets,
    ...(record ? { onStart: () => record(ran) } : {}),
  });
  return { version: ran, answer };
}
