import { createDb, migrateToLatest, startEmbeddedPostgres } from '@wds/db';
import { resolve } from 'node:path';
import { loadConfig } from './config.js';

/** `pnpm db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database under DATA_DIR). */
const config = loadConfig(process.env);
const embedded = config.DATABASE_URL ? undefined : await startEmbeddedPostgres({ dataDir: resolve(config.DATA_DIR), port: config.EMBEDDED_PG_PORT, backendMemoryBytes: config.EMBEDDED_PG_BACKEND_MEMORY_MB * 1024 * 1024 });
const { db } = createDb(config.DATABASE_URL ?? (embedded as { url: string }).url, { max: 1 });
try {
  const applied = await migrateToLatest(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await db.destroy();
  await embedded?.stop();
}
