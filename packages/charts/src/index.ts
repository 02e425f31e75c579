export * from './charts.js';
export * from './pinning.js';
export * from './views.js';
