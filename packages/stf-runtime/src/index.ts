export * from './types.js';
export { parseDockerConfig, type DockerConfig } from './docker-config.js';
export { validateStfCode, type RuntimeName } from './validate.js';
