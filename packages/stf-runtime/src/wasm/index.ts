export {
  inspectWasmModule,
  WASM_PAGE_BYTES,
  type WasmMemoryInfo,
  type WasmModuleInfo,
} from './inspect.js';
export { validateWasmModule } from './validate.js';
export {
  createWasmRuntime,
  type WasmRuntime,
  type WasmRuntimeOptions,
  type WasmRuntimeStats,
} from './runtime.js';
