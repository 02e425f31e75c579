import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

describe("pg-boss's internals we depend on", () => {
  it('is the schema pgboss-tables.ts was written against: re-check its queries over the job table before changing this', () => {
    // src/pgboss-tables.ts reads and updates pg-boss's own `job` table (state order, expire_in, singleton_key).
    expect((require('pg-boss/version.json') as { schema: number }).schema).toBe(24);
    expect((require('pg-boss/package.json') as { version: string }).version).toBe('10.4.2');
  });
});
