import type { Db } from '@wds/db';
import type { WorkspaceSql } from '@wds/workspace-sql';
import type { JwtVerifier } from '@wds/identity';
import type { Config } from './config.js';
import type { Logger } from './logger.js';

/** Everything a route needs, built once at start-up (and once per test file). */
export interface Services {
  db: Db;
  /** Runs workspace SQL through the rewriter and policies. */
  sql: WorkspaceSql;
  config: Config;
  logger: Logger;
  jwt: JwtVerifier | undefined;
  /** The admin interface is disabled when undefined. */
  adminToken: string | undefined;
}
