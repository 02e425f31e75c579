import { type Config, loadConfig } from './config.js';
import { keepRunningOnStrayErrors } from './last-resort.js';
import { createLogger, type Logger } from './logger.js';

/**
 * The body of a process's main module (the API's and the worker's): settings from the environment (exit 2 when
 * invalid), the last-resort guard, `start`, and shutdown on SIGTERM/SIGINT — from the first moment, so that a signal
 * during start-up waits for the start and then stops the same way (drain requests and jobs, then the database).
 * A second signal does not wait.
 */
export function runProcess(start: (config: Config, logger: Logger) => Promise<{ close(): Promise<void> }>): void {
  const config = (() => {
    try {
      return loadConfig(process.env);
    } catch (err) {
      console.error((err as Error).message);
      process.exit(2);
    }
  })();
  const logger = createLogger(config.LOG_LEVEL);
  keepRunningOnStrayErrors(logger);

  const started = start(config, logger).catch((err) => {
    logger.fatal({ err }, 'start-up failed');
    process.exit(1);
  });

  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting without waiting for the shutdown');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const running = await started;
    await running.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', (signal) => void stop(signal));
  process.on('SIGTERM', (signal) => void stop(signal));
}
