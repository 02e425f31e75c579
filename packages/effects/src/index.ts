export * from './effects.js';
