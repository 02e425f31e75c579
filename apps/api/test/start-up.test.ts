/** Start-up refusals: a configuration that could never run its jobs, and a port already in use. */
import { createServer } from 'node:net';
import { createDatabase } from '@wds/testkit';
import { describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startServer } from '../src/server.js';

const logger = createLogger('silent');

describe('startServer refuses to start half-way', () => {
  it('RUN_JOBS=false without DATABASE_URL (nothing could run the embedded database\'s jobs)', async () => {
    await expect(startServer(loadConfig({ RUN_JOBS: 'false', DATA_DIR: '/nonexistent/never-created', LOG_LEVEL: 'silent' }), logger)).rejects.toThrow(
      /RUN_JOBS=false needs DATABASE_URL/,
    );
  });

  it('a port in use fails the start (instead of a process without a listener), and a later start works', async () => {
    const taken = createServer();
    await new Promise<void>((ok) => taken.listen(0, '127.0.0.1', ok));
    const port = (taken.address() as { port: number }).port;
    const url = await createDatabase(inject('pgServerUrl'), { prefix: 'startup' });
    const config = (p: number) => loadConfig({ DATABASE_URL: url, PORT: String(p), SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'), LOG_LEVEL: 'silent' });
    try {
      await expect(startServer(config(port), logger)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await new Promise((ok) => taken.close(ok));
    }
    // What the failed start opened was closed: the same database serves a new start.
    const running = await startServer(config(0), logger);
    try {
      expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });
});
