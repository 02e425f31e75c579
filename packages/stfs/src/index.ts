export * from './stfs.js';
export * from './secrets.js';
export * from './cache.js';
export { runnableVersion } from './runnable.js';
