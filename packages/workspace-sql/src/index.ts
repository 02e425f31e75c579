export * from './execute.js';
export { ensureWorkspaceRole, rolePassword, secretFromUrl } from './roles.js';
export { WorkspaceConnector } from './connections.js';
export { mapDatabaseError } from './errors.js';
export { userValueTypes } from './values.js';
