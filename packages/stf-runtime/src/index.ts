export * from './types.js';
export { parseDockerConfig, type DockerConfig } from './docker-config.js';
export { validateStfCode, type RuntimeName } from './validate.js';
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
