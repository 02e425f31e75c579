import { resolveVersion } from '@wds/stfs';
import type { StfRunnerDeps } from './deps.js';
import { type RunAnswer, type RunnableVersion, type RunWorkspace, runAsUser } from './run.js';

/** What instant-run ran (for its audit entry) and what it answers. */
export interface InstantRun {
  version: { id: string; stf_id: string; version: string; runtime: RunnableVersion['runtime'] };
  answer: RunAnswer;
}

/**
 * instant_run_stf: a version (by id, or the newest of an STF) run without a workflow, as the user — its sql()
 * calls see what the user's policies allow, and commit when the run succeeds.
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
  },
): Promise<InstantRun> {
  const version = await resolveVersion(deps.db, req.workspace.id, { stfVersionId: req.stfVersionId, stfId: req.stfId });
  const answer = await runAsUser(deps, { workspace: req.workspace, userId: req.userId, version, input: req.input, sources: req.sources });
  return { version: { id: version.id, stf_id: version.stf_id, version: version.version, runtime: version.runtime }, answer };
}
