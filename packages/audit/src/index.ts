export * from './operations.js';
export * from './audit.js';
