export * from './policies.js';
export * from './policy-groups.js';
export * from './views.js';
