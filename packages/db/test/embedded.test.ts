import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startEmbeddedPostgres } from '../src/embedded.js';

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
