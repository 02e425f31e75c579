export {
  createJavascriptRuntime,
  type JavascriptRuntime,
  type JavascriptRuntimeOptions,
  type JavascriptRuntimeStats,
} from './pool.js';
export { BUNDLED_LIBRARIES } from './libraries.js';
export { classifyProgram, isModuleCode, type ProgramForm } from './program.js';
