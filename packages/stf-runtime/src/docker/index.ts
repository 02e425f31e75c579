export { EngineError, parseDockerHost, type EngineAddress } from './engine.js';
export {
  API_SOCKET,
  createDockerRuntime,
  parseOutput,
  type DockerRuntime,
  type DockerRuntimeOptions,
  type DockerRuntimeStats,
} from './runtime.js';
