export * from './documents.js';
export * from './sections.js';
export * from './views.js';
