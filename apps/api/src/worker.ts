import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { openServices, startBackgroundWork } from './services-setup.js';
import type { Services } from './services.js';

export interface RunningWorker {
  services: Services;
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
  const background = startBackgroundWork(opened.services);
  logger.info('worker running: background jobs and maintenance sweeps');
  let closing: Promise<void> | undefined;
  return {
    services: opened.services,
    close: () =>
      (closing ??= (async () => {
        await background.stop();
        await opened.close();
      })()),
  };
}
