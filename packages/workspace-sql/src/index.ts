export * from './execute.js';
export { OFFLOAD_BYTES, type Decisions } from './statement.js';
export { AnalysisWorker } from './offload.js';
export { WORKSPACE_ROLE_SETTINGS, ensureWorkspaceRole, rolePassword, roleSecret } from './roles.js';
export { WorkspaceConnector } from './connections.js';
export { mapDatabaseError } from './errors.js';
export { userValueTypes } from './values.js';
export { DEFAULT_REWRITE_CACHE, type RewriteCacheLimits, type RewriteCacheStats } from './rewrite-cache.js';
export { MAX_CAPTURED_IMAGE_BYTES, capturedImagesSql } from './row-capture.js';
