import { DEFAULT_LIMITS, type RuntimeName, type StfLimits } from '@wds/stf-runtime';
import type { StfRunnerConfig } from './deps.js';

/** The limits one run of an STF in `runtime` gets: docker has its own time and memory, the others STF_TIMEOUT_MS. */
export function runLimits(runtime: RuntimeName, config: StfRunnerConfig): StfLimits {
  if (runtime === 'docker') {
    return { ...DEFAULT_LIMITS, timeoutMs: config.STF_DOCKER_TIMEOUT_MS, memoryBytes: config.STF_DOCKER_MEMORY_MB * 1024 * 1024 };
  }
  return { ...DEFAULT_LIMITS, timeoutMs: config.STF_TIMEOUT_MS };
}
