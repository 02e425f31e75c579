import { pino } from 'pino';

export type Logger = pino.Logger;

/** Structured JSON logs; anything that could carry a credential is redacted before it is written. */
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
    destination,
  );
}
