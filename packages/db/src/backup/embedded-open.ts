/**
 * The embedded database of a DATA_DIR for a tool (backup, restore) that runs beside the service or without it: a
 * server already running on that directory is used where it listens (postmaster.pid names the port; the password
 * is in DATA_DIR/postgres-password); otherwise the tool starts one for itself and stops it when done.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startEmbeddedPostgres } from '../embedded.js';

export interface OpenedEmbedded {
  url: string;
  /** Whether this call started the server (then `close` stops it). */
  started: boolean;
  close(): Promise<void>;
}

/** postmaster.pid: pid, data directory, start time, port, socket directory, listen address, shmem key, status. */
async function runningServer(pgDir: string): Promise<{ port: number; host: string } | undefined> {
  const content = await readFile(path.join(pgDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const lines = content?.split('\n') ?? [];
  const pid = Number.parseInt(lines[0] ?? '', 10);
  const port = Number.parseInt(lines[3] ?? '', 10);
  if (!(pid > 0) || !(port > 0)) return undefined;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => undefined);
  if (comm !== undefined && comm.trim() !== 'postgres') return undefined;
  const host = (lines[5] ?? '').trim().split(/[ ,]/)[0] || '127.0.0.1';
  return { port, host: host === '*' || host === '0.0.0.0' ? '127.0.0.1' : host };
}

export async function openEmbeddedDatabase(dataDir: string, opts: { log?: (msg: string) => void } = {}): Promise<OpenedEmbedded> {
  const pgDir = path.join(dataDir, 'postgres');
  const running = existsSync(path.join(pgDir, 'PG_VERSION')) ? await runningServer(pgDir) : undefined;
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
