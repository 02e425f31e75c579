import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { startTestPostgres } from '../src/index.js';

async function scalar(url: string, sql: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(sql);
    return Object.values(rows[0] ?? {})[0];
  } finally {
    await client.end();
  }
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('startTestPostgres', () => {
  it('provides the server of the global setup', async () => {
    expect(await scalar(inject('pgServerUrl'), 'SELECT current_database()')).toBe('postgres');
  });

  it('starts embedded PostgreSQL with fast, throwaway settings when no container runtime exists', async () => {
    vi.stubEnv('TEST_DATABASE_URL', undefined);
    const server = await startTestPostgres();
    expect(server.kind).toBe('embedded');
    const dataDir = String(await scalar(server.url, 'SHOW data_directory'));
    expect(await scalar(server.url, 'SHOW fsync')).toBe('off');
    expect(await scalar(server.url, 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user')).toBe(true);
    await server.stop();
    await server.stop();
    expect(existsSync(dataDir)).toBe(false);
    await expect(scalar(server.url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
  });

  it('falls back to embedded quickly when the configured container runtime does not answer', async () => {
    vi.stubEnv('TEST_DATABASE_URL', undefined);
    vi.stubEnv('DOCKER_HOST', 'unix:///nonexistent/docker.sock');
    const info = vi.spyOn(console, 'info');
    const server = await startTestPostgres();
    try {
      expect(server.kind).toBe('embedded');
      expect(info).toHaveBeenCalledTimes(1);
      expect(info.mock.calls[0]?.[0]).toMatch(/embedded \(testcontainers failed after \d+ ms: /);
      // Quickly: the missing runtime refused at once, not by one of the set-up's time limits running out.
      expect(info.mock.calls[0]?.[0]).not.toMatch(/within \d+ ms/);
    } finally {
      info.mockRestore();
      await server.stop();
    }
  });

  it('honours TEST_DATABASE_URL and leaves that server running on stop', async () => {
    const url = inject('pgServerUrl');
    vi.stubEnv('TEST_DATABASE_URL', url);
    const server = await startTestPostgres();
    expect(server).toMatchObject({ kind: 'external', url });
    await server.stop();
    expect(await scalar(url, 'SELECT 1')).toBe(1);
  });
});
