import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findPgTools, openEmbeddedDatabase, type PgTools, PgToolsNotFoundError } from '@wds/db';
import { type BackupManifest, createBackup, readManifest, restoreBackup } from '@wds/storage';
import { createBlobStore } from './blob-store.js';
import type { Config } from './config.js';

/** In a checkout, scripts/postgres-client.sh installs the client programs when they are missing (Debian, root). */
const INSTALL_SCRIPT = fileURLToPath(new URL('../../../scripts/postgres-client.sh', import.meta.url));

/** The service files of an embedded DATA_DIR that a backup keeps: without secrets-key, sealed STF secrets are lost. */
const SERVICE_FILES = ['secrets-key', 'admin-token'];

async function pgTools(env: NodeJS.ProcessEnv, log: (msg: string) => void): Promise<PgTools> {
  try {
    return await findPgTools(env);
  } catch (err) {
    if (!(err instanceof PgToolsNotFoundError) || env.PG_BIN_DIR || !existsSync(INSTALL_SCRIPT)) throw err;
    log('pg_dump/pg_restore not found: running scripts/postgres-client.sh');
    const { stdout } = await promisify(execFile)('bash', [INSTALL_SCRIPT], { timeout: 10 * 60_000 });
    const dir = /PG_BIN_DIR=(\S+)/.exec(stdout)?.[1];
    if (!dir) throw err;
    return findPgTools({ ...env, PG_BIN_DIR: dir });
  }
}

/**
 * The database and blob store the configuration names, for one backup or restore: DATABASE_URL, or the embedded
 * database of DATA_DIR (used where it runs, or started for the duration).
 */
async function withDeployment<T>(
  config: Config,
  log: (msg: string) => void,
  work: (d: { databaseUrl: string; blobs: ReturnType<typeof createBlobStore>; files?: Record<string, string> }) => Promise<T>,
): Promise<T> {
  const dataDir = resolve(config.DATA_DIR);
  const blobs = createBlobStore(config, dataDir);
  const embedded = config.DATABASE_URL ? undefined : await openEmbeddedDatabase(dataDir);
  if (embedded) log(embedded.started ? `started the embedded PostgreSQL of ${dataDir}` : `using the running embedded PostgreSQL of ${dataDir}`);
  try {
    const files = embedded ? Object.fromEntries(SERVICE_FILES.map((f) => [f, join(dataDir, f)])) : undefined;
    return await work({ databaseUrl: config.DATABASE_URL ?? (embedded as { url: string }).url, blobs, ...(files ? { files } : {}) });
  } finally {
    (blobs as { destroy?: () => void }).destroy?.();
    await embedded?.close();
  }
}

export async function backup(config: Config, dir: string, env: NodeJS.ProcessEnv, log: (msg: string) => void): Promise<BackupManifest> {
  const tools = await pgTools(env, log);
  return withDeployment(config, log, (d) => createBackup({ ...d, dir, tools, log }));
}

export async function restore(config: Config, dir: string, env: NodeJS.ProcessEnv, log: (msg: string) => void): Promise<BackupManifest> {
  await readManifest(dir); // not a backup: say so before starting a database
  const tools = await pgTools(env, log);
  return withDeployment(config, log, (d) => restoreBackup({ ...d, dir, tools, log }));
}
