export * from './schema.js';
export * from './connect.js';
export * from './migrate.js';
export * from './ids.js';
export * from './versions.js';
export * from './embedded.js';
export * from './connection-errors.js';
export { sql, type Transaction, type Kysely } from 'kysely';
export * from './backup/index.js';
