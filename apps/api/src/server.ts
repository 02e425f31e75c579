import { type ServerType, serve } from '@hono/node-server';
import { createApp } from './app.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { applyUploadTimeouts } from './http-timeouts.js';
import { drainable } from './http-drain.js';
import { metricsApp } from './http/metrics.js';
import { openServices, startBackgroundWork, shutdownStep } from './services-setup.js';
import type { Services } from './services.js';

export interface RunningServer {
  url: string;
  services: Services;
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
  let metricsServer: ServerType | undefined;
  const listen = (fetch: (req: Request) => Response | Promise<Response>, port: number) =>
    new Promise<ServerType>((ok, fail) => {
      const s = serve({ fetch, hostname: config.HOST, port }, () => {
        s.off('error', fail);
        ok(s);
      });
      // An address in use (or not ours to bind) fails the start instead of leaving a process without a listener.
      s.once('error', fail);
    });
  try {
    const app = createApp(services);
    server = await listen(app.fetch, config.PORT);
    // METRICS_PORT: /metrics alone, without a token, on a listener of its own (docs/metrics.md).
    if (config.METRICS_PORT !== undefined) {
      try {
        metricsServer = await listen(metricsApp(services.metrics).fetch, config.METRICS_PORT);
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
  applyUploadTimeouts(server, config);
  const drain = drainable(server);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  logger.info({ url, data_dir: opened.embedded ? opened.dataDir : undefined }, 'listening');
  if (metricsServer) {
    const m = metricsServer.address();
    const metricsPort = typeof m === 'object' && m ? m.port : config.METRICS_PORT;
    logger.info({ url: `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${metricsPort}/metrics` }, 'metrics listening');
  }

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      // Stop accepting, let in-flight requests finish (bounded), then the jobs, then release the database.
      await shutdownStep(logger, 'HTTP drain', () => drain(config.SHUTDOWN_TIMEOUT_MS), config.SHUTDOWN_TIMEOUT_MS + 5_000);
      if (metricsServer) {
        const s = metricsServer;
        await shutdownStep(logger, 'metrics listener', () => {
          const closed = new Promise<void>((done) => s.close(() => done()));
          (s as { closeAllConnections?(): void }).closeAllConnections?.();
          return closed;
        });
      }
      await background?.stop();
      await opened.close();
    })());
  return { url, services, close };
}
