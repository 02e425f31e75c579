import { pino } from 'pino';

export type Logger = pino.Logger;

/** Bytes of log lines held before they are written, and the longest a line waits when fewer arrive. */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 100;

/**
 * Structured JSON logs; anything that could carry a credential is redacted before it is written. Without a
 * destination they go to stdout asynchronously, in batches: a write once 4 KiB of lines are pending, else every
 * 100 ms (one write per request line cost more CPU than the rest of the logging, issue 16). pino writes what is
 * pending synchronously when the process exits (process.exit, a signal's shutdown, the end of the event loop); a
 * process killed outright (SIGKILL, the OOM killer, a native crash) loses the lines of its last 100 ms, at most
 * 4 KiB beyond what was already being written (docs/performance.md).
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: [
          'authorization',
          'headers.authorization',
          'headers["x-admin-token"]',
          'headers.cookie',
          'token',
          'key',
          'password',
          'secret',
          'client_secret',
          '*.token',
          '*.key',
          '*.password',
          '*.secret',
          '*.client_secret',
        ],
        censor: '[redacted]',
      },
    },
    destination ?? pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS }),
  );
}

const withoutRedaction = new WeakMap<Logger, Logger>();

/**
 * The same logger (level, destination, output) without the redaction pass, for lines whose keys are fixed in our
 * code and none of them a redacted one: the line of every request (app.ts), where redaction cost ~5 µs and could
 * never change a byte. Anything else logs through the logger itself.
 */
export function unredacted(logger: Logger): Logger {
  let plain = withoutRedaction.get(logger);
  if (!plain) {
    plain = logger.child({}, { redact: [] });
    withoutRedaction.set(logger, plain);
  }
  return plain;
}
