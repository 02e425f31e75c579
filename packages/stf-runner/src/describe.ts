import { openSealedSecrets, runCacheOf, runnableVersion, type SealedSecret } from '@wds/stfs';
import type { StfRunnerDeps } from './deps.js';
import { type RunAnswer, type RunnableVersion, type RunWorkspace, runAsUser } from './run.js';

/** A version as describe reads it: the stored schemas may be absent. */
export interface DescribableVersion extends RunnableVersion {
  id: string;
  version: string;
  input_schema: unknown;
  output_schema: unknown;
}

type Schema = Record<string, unknown>;

/** DECISIONS §6: where the schemas came from — saved with the version, answered by the code, or neither. */
export type StfDescription = {
  stf_id: string;
  stf_version_id: string;
  version: string;
  runtime: RunnableVersion['runtime'];
  input_schema: unknown;
  output_schema: unknown;
} & (
  | { source: 'stored' }
  | { source: 'run'; description?: string }
  | { source: 'none'; error?: Extract<RunAnswer, { success: false }>['error'] }
);

const isSchema = (x: unknown): x is Schema => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * The input and output schemas of a version: the stored ones when it has any; otherwise the code is asked (input
 * `{ operation: 'describe' }`, as the user, without sql() so describing changes nothing) and its answer used when it
 * names a schema. A failed run is `source: 'none'` with the run's error.
 */
export async function describeVersion(
  deps: StfRunnerDeps,
  req: {
    workspace: RunWorkspace;
    userId: string;
    version: DescribableVersion;
    /** The STF's sealed secrets when the caller read them with the version (opened only if the code is asked). */
    sealedSecrets?: SealedSecret[];
  },
): Promise<StfDescription> {
  const row = req.version;
  const head = { stf_id: row.stf_id, stf_version_id: row.id, version: row.version, runtime: row.runtime };
  if (row.input_schema || row.output_schema) {
    return { ...head, input_schema: row.input_schema ?? null, output_schema: row.output_schema ?? null, source: 'stored' };
  }
  const answer = await runAsUser(deps, {
    workspace: req.workspace,
    userId: req.userId,
    version: row,
    input: { operation: 'describe' },
    sources: {},
    sql: false,
    ...(req.sealedSecrets ? { secrets: deps.secrets ? openSealedSecrets(deps.secrets, row.stf_id, req.sealedSecrets) : {} } : {}),
  });
  const out = answer.success ? answer.output : undefined;
  if (isSchema(out) && ('input_schema' in out || 'output_schema' in out)) {
    return {
      ...head,
      input_schema: isSchema(out.input_schema) ? out.input_schema : null,
      output_schema: isSchema(out.output_schema) ? out.output_schema : null,
      ...(typeof out.description === 'string' ? { description: out.description } : {}),
      source: 'run',
    };
  }
  return { ...head, input_schema: null, output_schema: null, source: 'none', ...(answer.success ? {} : { error: answer.error }) };
}

/** describe_stf: the version of a live STF of the workspace (by label, else the newest), described. */
export async function describeStf(
  deps: StfRunnerDeps,
  req: { workspace: RunWorkspace; userId: string; stfId: string; label?: string | undefined },
): Promise<StfDescription> {
  const { version, sealed_secrets } = await runnableVersion(deps.db, runCacheOf(deps), req.workspace.id, { stfId: req.stfId, label: req.label });
  return describeVersion(deps, { workspace: req.workspace, userId: req.userId, version, sealedSecrets: sealed_secrets });
}
