/**
 * The embedded database of a DATA_DIR for a tool (backup, restore) that runs beside the service or without it: a
 * server already running on that directory is used where it listens (the password is in DATA_DIR/postgres-password);
 * otherwise the tool starts one for itself and stops it when done.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startEmbeddedPostgres } from '../embedded.js';
import { findPostmaster, processInfo } from '../postmaster.js';

export interface OpenedEmbedded {
  url: string;
  /** Whether this call started the server (then `close` stops it). */
  started: boolean;
  close(): Promise<void>;
}

/**
 * The server running on pgDir, verified the way the service verifies a left-over one (findPostmaster: a live
 * `postgres` whose own command line names this data directory, so a reused PID is never taken for it), at the
 * port on that command line (not the lock file's, which may be stale). The superuser password is only ever sent
 * there, to 127.0.0.1, where the embedded server listens.
 */
function runningServer(pgDir: string): { port: number; host: string } | undefined {
  const pm = findPostmaster(pgDir);
  if (!pm) return undefined;
  const args = processInfo(pm.pid)?.args ?? [];
  const p = args.indexOf('-p');
  const port = p >= 0 ? Number.parseInt(args[p + 1] ?? '', 10) : Number.NaN;
  return port > 0 ? { port, host: '127.0.0.1' } : undefined;
}

export async function openEmbeddedDatabase(dataDir: string, opts: { log?: (msg: string) => void } = {}): Promise<OpenedEmbedded> {
  const pgDir = path.join(dataDir, 'postgres');
  const running = existsSync(path.join(pgDir, 'PG_VERSION')) ? runningServer(pgDir) : undefined;
  if (running) {
    const password = (await readFile(path.join(dataDir, 'postgres-password'), 'utf8')).trim();
    return {
      url: `postgres://postgres:${encodeURIComponent(password)}@${running.host}:${running.port}/postgres`,
      started: false,
      close: async () => {},
    };
  }
  const server = await startEmbeddedPostgres({ dataDir, ...(opts.log ? { log: opts.log } : {}) });
  return { url: server.url, started: true, close: () => server.stop() };
}
