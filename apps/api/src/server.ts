import { type ServerType, serve } from '@hono/node-server';
import { createApp } from './app.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { applyUploadTimeouts } from './http-timeouts.js';
import { drainable } from './http-drain.js';
import { openServices, startBackgroundWork, shutdownStep } from './services-setup.js';
import type { Services } from './services.js';

export interface RunningServer {
  url: string;
  services: Services;
  close(): Promise<void>;
}

/**
 * Start-up of an API process: services (database, migrations, …) → background work unless RUN_JOBS=false (then
 * worker processes run it) → HTTP listener.
 */
export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const opened = await openServices(config, logger);
  const { services } = opened;
  const background = config.RUN_JOBS ? await startBackgroundWork(services) : undefined;
  if (!background) logger.info('RUN_JOBS=false: background jobs and sweeps are left to worker processes');
  const app = createApp(services);
  const server: ServerType = await new Promise((ok) => {
    const s = serve({ fetch: app.fetch, hostname: config.HOST, port: config.PORT }, () => ok(s));
  });
  applyUploadTimeouts(server, config);
  const drain = drainable(server);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  logger.info({ url, data_dir: opened.embedded ? opened.dataDir : undefined }, 'listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      // Stop accepting, let in-flight requests finish (bounded), then the jobs, then release the database.
      await shutdownStep(logger, 'HTTP drain', () => drain(config.SHUTDOWN_TIMEOUT_MS));
      await background?.stop();
      await opened.close();
    })());
  return { url, services, close };
}
