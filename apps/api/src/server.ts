import type { Server } from 'node:http';
import type { ServerType } from '@hono/node-server';
import { createApp } from './app.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { applyUploadTimeouts } from './http-timeouts.js';
import { drainable } from './http-drain.js';
import { listen, listenerUrl, serveMetrics } from './listen.js';
import { openServices, startBackgroundWork, shutdownStep } from './services-setup.js';
import { type RunningRealtime, startRealtime } from './realtime.js';
import type { Services } from './services.js';

export interface RunningServer {
  url: string;
  services: Services;
  realtime: RunningRealtime;
  close(): Promise<void>;
}

/**
 * Start-up of an API process: services (database, migrations, job queues, …) → the sweeps unless RUN_JOBS=false
 * (then worker processes work the queues and sweep) → HTTP listener.
 */
export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  if (!config.RUN_JOBS && !config.DATABASE_URL) {
    // Workers refuse the embedded database (it belongs to this process): nothing would ever run the jobs.
    throw new Error('Invalid configuration: RUN_JOBS=false needs DATABASE_URL (worker processes share it); with the embedded database the API runs its jobs');
  }
  const opened = await openServices(config, logger, { runJobs: config.RUN_JOBS });
  const { services } = opened;
  const background = config.RUN_JOBS ? startBackgroundWork(services) : undefined;
  if (!background) logger.info('RUN_JOBS=false: background jobs and sweeps are left to worker processes');
  let server: ServerType;
  let metricsServer: { url: string; close(): Promise<void> } | undefined;
  try {
    const app = createApp(services);
    server = await listen(app.fetch, config.HOST, config.PORT);
    if (config.METRICS_PORT !== undefined) {
      try {
        metricsServer = await serveMetrics(services.metrics, config.HOST, config.METRICS_PORT);
      } catch (err) {
        server.close();
        throw err;
      }
    }
  } catch (err) {
    await background?.stop();
    await opened.close();
    throw err;
  }
  let realtime: RunningRealtime;
  try {
    realtime = await startRealtime(services, server as Server);
  } catch (err) {
    server.close();
    await metricsServer?.close();
    await background?.stop();
    await opened.close();
    throw err;
  }
  applyUploadTimeouts(server, config);
  const drain = drainable(server);
  const url = listenerUrl(server, config.HOST);
  logger.info({ url, data_dir: opened.embedded ? opened.dataDir : undefined }, 'listening');
  if (metricsServer) logger.info({ url: metricsServer.url }, 'metrics listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      // Stop accepting, let in-flight requests finish (bounded), then the jobs, then release the database. WebSockets
      // (upgraded: no longer requests) are closed first.
      await shutdownStep(logger, 'realtime', () => realtime.close());
      await shutdownStep(logger, 'HTTP drain', () => drain(config.SHUTDOWN_TIMEOUT_MS), config.SHUTDOWN_TIMEOUT_MS + 5_000);
      if (metricsServer) {
        const m = metricsServer;
        await shutdownStep(logger, 'metrics listener', () => m.close());
      }
      await background?.stop();
      await opened.close();
    })());
  return { url, services, realtime, close };
}
