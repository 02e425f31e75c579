import {
  createDockerRuntime,
  createJavascriptRuntime,
  createWasmRuntime,
  DEFAULT_LIMITS,
  type StfLimits,
  type StfRuntime,
} from '@wds/stf-runtime';
import type { Config } from './config.js';

export type RuntimeName = 'javascript' | 'wasm' | 'docker';

/**
 * The STF runtimes this server offers. `docker` exists only when DOCKER_HOST names a container engine; without
 * it docker STFs can still be saved, and running one answers 503.
 */
export function createRuntimes(
  config: Config,
  opts: { jsWorkers?: number; prewarm?: boolean } = {},
): Partial<Record<RuntimeName, StfRuntime>> {
  return {
    javascript: createJavascriptRuntime({ workers: opts.jsWorkers ?? config.STF_JS_WORKERS, prewarm: opts.prewarm }),
    wasm: createWasmRuntime({ allowedHosts: config.STF_WASM_ALLOWED_HOSTS }),
    ...(config.DOCKER_HOST
      ? {
          docker: createDockerRuntime({
            dockerHost: config.DOCKER_HOST,
            concurrency: config.STF_DOCKER_CONCURRENCY,
            pidsLimit: config.STF_DOCKER_PIDS,
          }),
        }
      : {}),
  };
}

/** The limits one run of an STF in `runtime` gets. */
export function runLimits(runtime: RuntimeName, config: Config): StfLimits {
  if (runtime === 'docker') {
    return { ...DEFAULT_LIMITS, timeoutMs: config.STF_DOCKER_TIMEOUT_MS, memoryBytes: config.STF_DOCKER_MEMORY_MB * 1024 * 1024 };
  }
  return { ...DEFAULT_LIMITS, timeoutMs: config.STF_TIMEOUT_MS };
}
