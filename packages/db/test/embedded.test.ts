import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startEmbeddedPostgres } from '../src/embedded.js';
import { findPostmaster, processInfo } from '../src/postmaster.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'wds-embedded-test-'));
  dirs.push(dir);
  return dir;
}

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('startEmbeddedPostgres', { timeout: 60_000 }, () => {
  it.runIf(process.platform === 'linux')('bounds the private memory of every backend: a bomb fails with out of memory, the server lives on', async () => {
    const server = await startEmbeddedPostgres({ dataDir: await tempDir(), backendMemoryBytes: 256 * 1024 * 1024 });
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ pid: number; postmaster: number }>('SELECT pg_backend_pid() AS pid');
      const limits = readFileSync(`/proc/${rows[0]?.pid}/limits`, 'utf8');
      expect(limits).toMatch(/^Max data size\s+268435456\s+268435456\s+bytes/m);
      // 16 MB a row, 40 rows: 640 MB of aggregate state, unbounded in PostgreSQL itself.
      const bomb = client.query(`SELECT length(string_agg(lpad('', 16000000, 'x'), '')) FROM generate_series(1, 40)`);
      await expect(bomb).rejects.toMatchObject({ code: '53200' });
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      const status = readFileSync(`/proc/${rows[0]?.pid}/status`, 'utf8');
      expect(Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]) * 1024).toBeLessThan(400 * 1024 * 1024);
    } finally {
      await client.end();
      await server.stop();
    }
  });

  it('keeps data and password across restarts and stays quiet without a log option', async () => {
    const consoleLog = vi.spyOn(console, 'log');
    const dataDir = await tempDir();

    const first = await startEmbeddedPostgres({ dataDir });
    expect(first.url).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/postgres$/);
    await query(first.url, 'CREATE TABLE notes (body text); INSERT INTO notes VALUES ($$kept$$)');
    await first.stop();
    await first.stop();

    const passwordFile = path.join(dataDir, 'postgres-password');
    expect((await stat(passwordFile)).mode & 0o777).toBe(0o600);
    const password = (await readFile(passwordFile, 'utf8')).trim();
    expect(first.url).toContain(`:${encodeURIComponent(password)}@`);

    const second = await startEmbeddedPostgres({ dataDir });
    try {
      expect(await query(second.url, 'SELECT body FROM notes')).toEqual([{ body: 'kept' }]);
      const [settings] = await query<{ encoding: string; listen: string }>(
        second.url,
        "SELECT current_setting('server_encoding') AS encoding, current_setting('listen_addresses') AS listen",
      );
      expect(settings).toEqual({ encoding: 'UTF8', listen: '127.0.0.1' });
    } finally {
      await second.stop();
    }
    expect(consoleLog).not.toHaveBeenCalled();
    consoleLog.mockRestore();
  });

  it('runs two instances with different data dirs side by side', async () => {
    const [a, b] = await Promise.all([
      startEmbeddedPostgres({ dataDir: await tempDir() }),
      startEmbeddedPostgres({ dataDir: await tempDir() }),
    ]);
    try {
      expect(new URL(a.url).port).not.toBe(new URL(b.url).port);
      await query(a.url, 'CREATE TABLE only_in_a (x int)');
      expect(await query(b.url, "SELECT to_regclass('only_in_a') AS t")).toEqual([{ t: null }]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('starts despite a stale postmaster.pid', async () => {
    const dataDir = await tempDir();
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    const lines: string[] = [];
    const first = await startEmbeddedPostgres({ dataDir, log: (msg) => lines.push(msg) });
    const crashedServerPidFile = await readFile(pidFile, 'utf8');
    await first.stop();
    expect(lines.join('\n')).toContain('database system is ready to accept connections');

    // Owned by the server's user: PostgreSQL treats a PID it may not signal (EPERM) as stale already.
    const uid = process.getuid?.() === 0 ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })) : undefined;
    const unrelated = spawn('sleep', ['60'], { uid });
    const unrelatedPid = String(unrelated.pid);
    try {
      const stale = {
        'dead pid': crashedServerPidFile,
        'empty file': '',
        'pid reused by another process': crashedServerPidFile.replace(/^\d+/, unrelatedPid),
      };
      for (const [label, content] of Object.entries(stale)) {
        await writeFile(pidFile, content);
        const server = await startEmbeddedPostgres({ dataDir }).catch((err: Error) => {
          throw new Error(`${label}: ${err.message}`);
        });
        await server.stop();
      }
    } finally {
      unrelated.kill();
    }
  });

  it('refuses a data dir that is in use, reporting the server log', async () => {
    const dataDir = await tempDir();
    const running = await startEmbeddedPostgres({ dataDir });
    try {
      await expect(startEmbeddedPostgres({ dataDir })).rejects.toThrow(/lock file "postmaster.pid" already exists/);
    } finally {
      await running.stop();
    }
  });
});

/** Another process that starts the server of dataDir and keeps running (built code: `pnpm build` first). */
async function startOwner(dataDir: string): Promise<{ proc: ChildProcess; url: string }> {
  const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'embedded.js');
  const script = `
    import { startEmbeddedPostgres } from ${JSON.stringify(dist)};
    const server = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)} });
    console.log(server.url);
    setInterval(() => {}, 60_000);
  `;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((ok, fail) => {
    proc.stdout?.once('data', (d) => ok(String(d).trim()));
    proc.once('exit', (code) => fail(new Error(`owner exited with ${code}`)));
  });
  return { proc, url };
}

const postmasterOf = (dataDir: string) => findPostmaster(path.join(dataDir, 'postgres'));

/** The watchdog process started for `owner` (node …/watchdog.js <owner> <data directory>). */
function watchdogOf(owner: number): number {
  const pid = readdirSync('/proc').find((entry) => {
    const args = processInfo(Number(entry))?.args ?? [];
    return args[1]?.endsWith('watchdog.js') && args[2] === String(owner);
  });
  if (!pid) throw new Error(`no watchdog for ${owner}`);
  return Number(pid);
}
const gone = (pid: number) => processInfo(pid) === undefined;

async function until(what: string, check: () => boolean, ms = 30_000): Promise<void> {
  for (const end = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
  }
}

describe('the embedded server outlives nothing and keeps its port', { timeout: 60_000 }, () => {
  it('keeps its port across restarts, takes a configured one, and runs in a session of its own', async () => {
    const dataDir = await tempDir();
    const first = await startEmbeddedPostgres({ dataDir });
    const port = new URL(first.url).port;
    expect(String(first.port)).toBe(port);
    expect(readFileSync(path.join(dataDir, 'postgres-port'), 'utf8').trim()).toBe(port);
    // Its own session: a Ctrl-C or a signal to our process group never reaches it.
    const pm = postmasterOf(dataDir)!;
    const [pgrp, session] = readFileSync(`/proc/${pm.pid}/stat`, 'utf8').split(') ')[1]!.split(' ').slice(2, 4);
    expect([pgrp, session]).toEqual([String(pm.pid), String(pm.pid)]);
    expect(pm.owner).toBe(process.pid);
    await first.stop();

    const second = await startEmbeddedPostgres({ dataDir });
    expect(new URL(second.url).port).toBe(port);
    await second.stop();

    // The remembered port is taken by someone else: a new one, remembered from then on.
    const squatter = createServer();
    await new Promise<void>((ok) => squatter.listen(Number(port), '127.0.0.1', ok));
    const notices: string[] = [];
    try {
      const third = await startEmbeddedPostgres({ dataDir, notify: (_level, msg) => notices.push(msg) });
      expect(new URL(third.url).port).not.toBe(port);
      expect(notices.join('\n')).toContain('is taken by another process');
      expect(readFileSync(path.join(dataDir, 'postgres-port'), 'utf8').trim()).toBe(String(third.port));
      await third.stop();
    } finally {
      await new Promise((ok) => squatter.close(ok));
    }

    const configured = await startEmbeddedPostgres({ dataDir, port: Number(port) });
    expect(configured.port).toBe(Number(port));
    expect(await query(configured.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await configured.stop();
  });

  it('is stopped by its watchdog when the process that started it is killed', async () => {
    const dataDir = await tempDir();
    const owner = await startOwner(dataDir);
    const pm = postmasterOf(dataDir)!;
    expect(pm.owner).toBe(owner.proc.pid);
    owner.proc.kill('SIGKILL');
    await until('the orphaned server to stop', () => gone(pm.pid));
    expect(postmasterOf(dataDir)).toBeUndefined();
  });

  it('stops a server a dead process left behind, before starting its own', async () => {
    const dataDir = await tempDir();
    const owner = await startOwner(dataDir);
    await query(owner.url, 'CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)');
    const orphan = postmasterOf(dataDir)!;
    const watchdog = watchdogOf(owner.proc.pid!);
    // The owner and its watchdog at once, as when the whole service is killed: nobody stops the server.
    process.kill(watchdog, 'SIGKILL');
    owner.proc.kill('SIGKILL');
    await until('the owner to die', () => gone(owner.proc.pid!));
    expect(gone(orphan.pid)).toBe(false);

    const notices: string[] = [];
    const server = await startEmbeddedPostgres({ dataDir, notify: (_level, msg) => notices.push(msg) });
    try {
      expect(gone(orphan.pid)).toBe(true);
      expect(notices).toContain('stopping the embedded PostgreSQL a stopped service left running');
      expect(server.url).toBe(owner.url);
      expect(await query(server.url, 'SELECT x FROM kept')).toEqual([{ x: 1 }]);
    } finally {
      await server.stop();
    }
  });

  it('starts the server again when it exits on its own', async () => {
    const dataDir = await tempDir();
    const notices: string[] = [];
    const server = await startEmbeddedPostgres({ dataDir, notify: (_level, msg) => notices.push(msg) });
    try {
      const before = postmasterOf(dataDir)!;
      process.kill(before.pid, 'SIGINT');
      await until('the server to be back', () => notices.includes('embedded PostgreSQL is running again'));
      expect(notices[0]).toBe('embedded PostgreSQL exited unexpectedly; starting it again');
      expect(postmasterOf(dataDir)?.pid).not.toBe(before.pid);
      expect(await query(server.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await server.stop();
    }
    expect(postmasterOf(dataDir)).toBeUndefined();
  });
});
