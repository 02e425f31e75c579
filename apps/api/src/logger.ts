import { pino } from 'pino';

export type Logger = pino.Logger;

/**
 * Structured JSON logs; anything that could carry a credential is redacted before it is written. Without a
 * destination they go to stdout asynchronously (lines written while a write is pending are joined into one write,
 * off the request path); pino flushes what is pending when the process exits.
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
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
