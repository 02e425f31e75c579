import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { serveMetrics } from './listen.js';
import { openServices, shutdownStep, startBackgroundWork } from './services-setup.js';
import type { Services } from './services.js';

export interface RunningWorker {
  services: Services;
  /** With METRICS_PORT: where its Prometheus metrics are (job queues, embeddings, pools, the process). */
  metricsUrl: string | undefined;
  close(): Promise<void>;
}

/**
 * Start-up of a worker process (apps/worker): the same services as an API process and the background work (job
 * handlers, maintenance sweeps), no HTTP listener. It shares an external PostgreSQL with the API processes: the
 * embedded database belongs to the one process that started it.
 */
export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  if (!config.DATABASE_URL) {
    throw new Error('Invalid configuration: a worker needs DATABASE_URL (the database the API processes use); the embedded database is not shared');
  }
  const opened = await openServices(config, logger, { runJobs: true });
  // A worker has no other listener: its metrics need METRICS_PORT (METRICS_TOKEN guards the API's main port only).
  let metrics: { url: string; close(): Promise<void> } | undefined;
  if (config.METRICS_PORT !== undefined) {
    try {
      metrics = await serveMetrics(opened.services.metrics, config.HOST, config.METRICS_PORT);
    } catch (err) {
      await opened.close();
      throw err;
    }
    logger.info({ url: metrics.url }, 'metrics listening');
  }
  const background = startBackgroundWork(opened.services);
  logger.info('worker running: background jobs and maintenance sweeps');
  let closing: Promise<void> | undefined;
  return {
    services: opened.services,
    metricsUrl: metrics?.url,
    close: () =>
      (closing ??= (async () => {
        if (metrics) {
          const m = metrics;
          await shutdownStep(logger, 'metrics listener', () => m.close());
        }
        await background.stop();
        await opened.close();
      })()),
  };
}
