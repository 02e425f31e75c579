export * from './effects.js';
export * from './views.js';
