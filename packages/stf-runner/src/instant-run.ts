import { createHash } from 'node:crypto';
import { openSealedSecrets, runnableVersion } from '@wds/stfs';
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
    /** Stops the run when nobody waits for it any more (RunRequest.signal). */
    signal?: AbortSignal;
  },
): Promise<InstantRun> {
  const { version, sealed_secrets } = await runnableVersion(deps.db, deps.runCache, req.workspace.id, {
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
    ...(req.signal ? { signal: req.signal } : {}),
  });
  return { version: ran, answer };
}

/** The stf_id a run of unsaved code carries (docker's X-STF-ID, logs): the nil UUID, as on the origin's local loop. */
export const UNSAVED_STF_ID = '00000000-0000-0000-0000-000000000000';

/** What instant-run's code mode ran (for its audit entry). */
export interface InstantCodeRun {
  runtime: RunnableVersion['runtime'];
  code_bytes: number;
  code_sha256: string;
}

/**
 * instant_run_stf's code mode (the origin's development loop): code that is not saved, run as the user with the
 * limits of a saved version of its runtime and no secrets. The code was decoded and checked as a save would
 * (decodeStfCode); a failure of the code is an answer like any run's.
 */
export async function instantRunCode(
  deps: StfRunnerDeps,
  req: {
    workspace: RunWorkspace;
    userId: string;
    runtime: RunnableVersion['runtime'];
    code: Buffer;
    input: unknown;
    sources: Record<string, unknown>;
    record?: (ran: InstantCodeRun) => Promise<void>;
    /** Stops the run when nobody waits for it any more (RunRequest.signal). */
    signal?: AbortSignal;
  },
): Promise<{ ran: InstantCodeRun; answer: RunAnswer }> {
  const ran: InstantCodeRun = {
    runtime: req.runtime,
    code_bytes: req.code.length,
    code_sha256: createHash('sha256').update(req.code).digest('hex'),
  };
  const { record } = req;
  const answer = await runAsUser(deps, {
    workspace: req.workspace,
    userId: req.userId,
    version: { stf_id: UNSAVED_STF_ID, runtime: req.runtime, code: req.code },
    input: req.input,
    sources: req.sources,
    secrets: {},
    ...(record ? { onStart: () => record(ran) } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  return { ran, answer };
}
