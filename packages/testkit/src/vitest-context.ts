// Types `inject('pgServerUrl')` in tests whose vitest config uses `@wds/testkit/global-setup`.
import type {} from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of database `postgres` on the server started for this vitest run. */
    pgServerUrl: string;
    /** DOCKER_HOST of the container engine started by `@wds/testkit/container-engine-setup`. */
    dockerHost: string;
    /** Images that engine holds: busybox (sh and applets) and node (this machine's node binary). */
    dockerImages: { busybox: string; node: string };
  }
}
