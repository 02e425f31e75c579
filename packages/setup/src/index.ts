export * from './limits.js';
export * from './items.js';
export * from './title-rule.js';
export * from './chat-templates.js';
export * from './settings.js';
export * from './credentials.js';
export * from './views.js';
