export * from './operations.js';
export * from './audit.js';
export * from './views.js';
