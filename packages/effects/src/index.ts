export * from './effects.js';
export * from './resolve.js';
