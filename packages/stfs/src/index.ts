export * from './stfs.js';
export * from './secrets.js';
