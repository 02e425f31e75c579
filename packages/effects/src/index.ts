export * from './effects.js';
export * from './views.js';
export * from './resolve.js';
