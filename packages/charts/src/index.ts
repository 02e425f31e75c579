export * from './charts.js';
