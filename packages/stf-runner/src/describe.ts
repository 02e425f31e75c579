import { openSealedSecrets, runnableVersion, type SealedSecret } from '@wds/stfs';
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

/** Where the schemas came from (docs/stfs.md#describe) — saved with the version, answered by the code, or neither. */
export type StfDescription = {
  stf_id: string;
  stf_version_id: string;
  version: string;
  runtime: RunnableVersion['runtime'];
  input_schema: unknown;
  output_schema: unknown;
} & (
  | { source: 'stored' }
  | {
      source: 'run';
      description?: string;
      /**
       * The operations the code says it takes, as it lists them — the origin platform's convention is an object of
       * operation name → `{ description, required, optional }`. Only when the answer has them.
       */
      operations?: unknown;
    }
  | { source: 'none'; error?: Extract<RunAnswer, { success: false }>['error'] }
);

const isSchema = (x: unknown): x is Schema => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * Where a describe answer keeps its schemas: at the top of the output (ours: `{ input_schema?, output_schema?,
 * description?, operations? }`), or under `data` (the origin platform's convention for docker STFs:
 * `{ status: "success", operation: "describe", data: { input_schema, operations } }`). Undefined when neither
 * names a schema or operations.
 */
function describedBy(out: unknown): Schema | undefined {
  if (!isSchema(out)) return undefined;
  const names = (x: Schema) => 'input_schema' in x || 'output_schema' in x || 'operations' in x;
  if ('input_schema' in out || 'output_schema' in out) return out;
  if (isSchema(out.data) && names(out.data)) return out.data;
  if ('operations' in out) return out;
  return undefined;
}

/**
 * The input and output schemas of a version: the stored ones when it has any; otherwise the code is asked (input
 * `{ operation: 'describe' }`, as the user, without sql() so describing changes nothing) and its answer used when it
 * names a schema or operations, at its top or under `data` (the origin platform's shape, see describedBy); its
 * `operations` are passed on. A failed run is `source: 'none'` with the run's error.
 */
export async function describeVersion(
  deps: StfRunnerDeps,
  req: {
    workspace: RunWorkspace;
    userId: string;
    version: DescribableVersion;
    /** The STF's sealed secrets when the caller read them with the version (opened only if the code is asked). */
    sealedSecrets?: SealedSecret[];
    /** Stops the run of the code when nobody waits for it any more (RunRequest.signal). */
    signal?: AbortSignal | undefined;
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
    ...(req.signal ? { signal: req.signal } : {}),
    ...(req.sealedSecrets ? { secrets: deps.secrets ? openSealedSecrets(deps.secrets, row.stf_id, req.sealedSecrets) : {} } : {}),
  });
  const out = answer.success ? answer.output : undefined;
  const d = describedBy(out);
  if (d) {
    const description = typeof d.description === 'string' ? d.description : isSchema(out) && typeof out.description === 'string' ? out.description : undefined;
    const operations = isSchema(d.operations) || Array.isArray(d.operations) ? d.operations : undefined;
    return {
      ...head,
      input_schema: isSchema(d.input_schema) ? d.input_schema : null,
      output_schema: isSchema(d.output_schema) ? d.output_schema : null,
      ...(description !== undefined ? { description } : {}),
      ...(operations !== undefined ? { operations } : {}),
      source: 'run',
    };
  }
  return { ...head, input_schema: null, output_schema: null, source: 'none', ...(answer.success ? {} : { error: answer.error }) };
}

/** describe_stf: the version of a live STF of the workspace (by label, else the newest), described. */
export async function describeStf(
  deps: StfRunnerDeps,
  req: { workspace: RunWorkspace; userId: string; stfId: string; label?: string | undefined; signal?: AbortSignal | undefined },
): Promise<StfDescription> {
  const { version, sealed_secrets } = await runnableVersion(deps.db, deps.runCache, req.workspace.id, { stfId: req.stfId, label: req.label });
  return describeVersion(deps, { workspace: req.workspace, userId: req.userId, version, sealedSecrets: sealed_secrets, signal: req.signal });
}
