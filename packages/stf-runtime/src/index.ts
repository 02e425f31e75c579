export * from './types.js';
export { FairQueue, type FairQueueOptions, type FairQueueStats, type Grant, type WorkspaceQueueStats } from './fair-queue.js';
export { parseDockerConfig, type DockerConfig } from './docker-config.js';
export { RUNTIME_NAMES, validateStfCode, type RuntimeName } from './validate.js';
export {
  createJavascriptRuntime,
  BUNDLED_LIBRARIES,
  isModuleCode,
  type JavascriptRuntime,
  type JavascriptRuntimeOptions,
  type JavascriptRuntimeStats,
} from './javascript/index.js';
export {
  createWasmRuntime,
  inspectWasmModule,
  validateWasmModule,
  WASM_PAGE_BYTES,
  type WasmRuntime,
  type WasmRuntimeOptions,
  type WasmRuntimeStats,
  type WasmModuleInfo,
  type WasmMemoryInfo,
} from './wasm/index.js';
export {
  API_SOCKET,
  createDockerRuntime,
  EngineError,
  parseDockerHost,
  type DockerRuntime,
  type DockerRuntimeOptions,
  type DockerRuntimeStats,
  type EngineAddress,
} from './docker/index.js';
export {
  bundledLibrary,
  bundledLibrarySources,
  bundledLibraryTypes,
  listBundledLibraries,
  resolveLibraryName,
  ORIGIN_SCOPE,
  type BundledLibrary,
  type BundledLibraryCode,
} from './javascript/libraries.js';
