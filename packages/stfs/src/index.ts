export * from './stfs.js';
export * from './secrets.js';
export * from './views.js';
export * from './run-cache.js';
export { runnableVersion } from './runnable.js';
export * from './resolve.js';
