import type { Logger } from './logger.js';

/**
 * The last resort: an error that escaped every handler (a socket callback, a library's timer) is logged and the
 * process keeps serving every other tenant. Each such log line is a bug to fix where it was thrown.
 */
export function keepRunningOnStrayErrors(logger: Pick<Logger, 'error'>): void {
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception (kept running)'));
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection (kept running)'));
}
