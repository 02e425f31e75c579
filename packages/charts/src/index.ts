export * from './charts.js';
export * from './pinning.js';
