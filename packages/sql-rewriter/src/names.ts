import { ServiceError } from '@wds/errors';

/** Workspace tables live here; every logical name maps to `ws_<workspace id with _>_<logical>` in it. */
export const USER_SCHEMA = 'user_data';
export const MAX_LOGICAL_LENGTH = 23;
const LOGICAL = /^[a-z_][a-z0-9_]{0,22}$/;

export const isLogicalName = (name: string): boolean => LOGICAL.test(name);

export const workspacePrefix = (workspaceId: string): string => `ws_${workspaceId.toLowerCase().replace(/-/g, '_')}_`;

export function assertLogicalName(logical: string, what = 'table'): void {
  if (!isLogicalName(logical)) {
    throw new ServiceError(
      'INVALID_TABLE',
      `Invalid ${what} name: ${JSON.stringify(logical.slice(0, 80))}`,
      `${what} names are lower-case identifiers of at most ${MAX_LOGICAL_LENGTH} characters ([a-z_][a-z0-9_]*)`,
    );
  }
}

export function physicalName(workspaceId: string, logical: string, what = 'table'): string {
  assertLogicalName(logical, what);
  return workspacePrefix(workspaceId) + logical;
}

/** The PostgreSQL role that owns a workspace's tables and runs its SQL. */
export const workspaceRole = (workspaceId: string): string => `wds_ws_${workspaceId.toLowerCase().replace(/-/g, '')}`;

const ANY_PREFIX = /ws_[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}_/g;
const ANY_ROLE = /wds_ws_[0-9a-f]{32}/g;

/** Turns physical names in a database message back into logical ones; never shows another workspace's id. */
export const toLogicalText = (text: string): string =>
  text.replace(/"user_data"\./g, '').replace(/\buser_data\./g, '').replace(ANY_PREFIX, '').replace(ANY_ROLE, 'workspace role');
