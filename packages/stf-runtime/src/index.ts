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
