export * from './documents.js';
export * from './sections.js';
