export * from './execute.js';
export { ensureWorkspaceRole } from './roles.js';
export { userValueTypes } from './values.js';
