// Types `inject('pgServerUrl')` in tests whose vitest config uses `@wds/testkit/global-setup`.
import type {} from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of database `postgres` on the server started for this vitest run. */
    pgServerUrl: string;
  }
}
