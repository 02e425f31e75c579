import { guardedFetch, OutboundGuard } from '@wds/effect-runner';
import {
  createDockerRuntime,
  createJavascriptRuntime,
  createWasmRuntime,
  type RuntimeName,
  type StfRuntime,
} from '@wds/stf-runtime';
import type { Config } from './config.js';

/**
 * The STF runtimes this server offers. `docker` exists only when DOCKER_HOST names a container engine; without
 * it docker STFs can still be saved, and running one answers 503.
 *
 * Each runtime queues runs per workspace: at most STF_WORKSPACE_QUEUE waiting, and at most STF_WORKSPACE_MAX_RUNNING
 * in progress (by default half the runtime's slots, rounded up), so that one workspace never holds every worker and
 * another's run starts at once instead of after a whole run of the first. Wasm plugins reach the network only
 * through `outbound`, the guard of every other outbound call (by default one built from OUTBOUND_ALLOWLIST; pass
 * the server's own to share it).
 */
export function createRuntimes(
  config: Config,
  opts: { jsWorkers?: number; prewarm?: boolean; outbound?: OutboundGuard } = {},
): Partial<Record<RuntimeName, StfRuntime>> {
  const fairness = (slots: number) => ({
    maxQueuedPerWorkspace: config.STF_WORKSPACE_QUEUE,
    maxRunningPerWorkspace: config.STF_WORKSPACE_MAX_RUNNING || Math.ceil(slots / 2),
  });
  const outbound = opts.outbound ?? new OutboundGuard({ allowlist: config.OUTBOUND_ALLOWLIST });
  const jsWorkers = opts.jsWorkers ?? config.STF_JS_WORKERS;
  return {
    javascript: createJavascriptRuntime({ workers: jsWorkers, prewarm: opts.prewarm, ...fairness(jsWorkers) }),
    wasm: createWasmRuntime({
      allowedHosts: config.STF_WASM_ALLOWED_HOSTS,
      // No call of a run outlives the run: its abort signal (the deadline) and, as a backstop, the STF time limit.
      fetch: guardedFetch(outbound, { timeoutMs: config.STF_TIMEOUT_MS }),
      concurrency: config.STF_WASM_CONCURRENCY,
      ...fairness(config.STF_WASM_CONCURRENCY),
    }),
    ...(config.DOCKER_HOST
      ? {
          docker: createDockerRuntime({
            dockerHost: config.DOCKER_HOST,
            concurrency: config.STF_DOCKER_CONCURRENCY,
            pidsLimit: config.STF_DOCKER_PIDS,
            ...(config.STF_DOCKER_RELAY_IMAGE ? { relayImage: config.STF_DOCKER_RELAY_IMAGE } : {}),
            ...fairness(config.STF_DOCKER_CONCURRENCY),
          }),
        }
      : {}),
  };
}
