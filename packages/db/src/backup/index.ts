export { type DatabaseSnapshot, type DumpedRole, dumpDatabase, openSnapshot } from './dump.js';
export { assertEmptyDatabase, ownedEntries, restoreDatabase, TargetNotEmptyError } from './restore.js';
export { findPgTools, type PgTools, PgToolsNotFoundError } from './pg-tools.js';
export { type OpenedEmbedded, openEmbeddedDatabase } from './embedded-open.js';
