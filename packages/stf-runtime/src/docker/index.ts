export { EngineError, parseDockerHost, type EngineAddress } from './engine.js';
export { defaultRelayImage, RELAY_PORT } from './relay.js';
export {
  API_SOCKET,
  API_URL,
  createDockerRuntime,
  parseOutput,
  type DockerRuntime,
  type DockerRuntimeOptions,
  type DockerRuntimeStats,
} from './runtime.js';
