export * from './modes.js';
export * from './views.js';
export * from './proposals.js';
export * from './approval.js';
export * from './wait.js';
