import { loadConfig } from './config.js';
import { keepRunningOnStrayErrors } from './last-resort.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';

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

try {
  const running = await startServer(config, logger);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    await running.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
} catch (err) {
  logger.fatal({ err }, 'start-up failed');
  process.exit(1);
}
