import './vitest-context.js';

export { type CreateDatabaseOptions, createDatabase, createServiceRoleDatabase, dropDatabase } from './database.js';
export { startTestPostgres, type TestPostgres } from './server.js';
export { startContainerEngine, type TestContainerEngine } from './container-engine.js';
export { CHROMIUM_LOOPBACK_ARGS, chromiumPath } from './browser.js';
export * from './fake-drive.js';
export { ManualBus } from './manual-bus.js';
