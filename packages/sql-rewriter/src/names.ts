import { createHash } from 'node:crypto';
import { ServiceError } from '@wds/errors';

/** Workspace tables live here; every logical name maps to `ws_<workspace id with _>_<logical>` in it. */
export const USER_SCHEMA = 'user_data';
/** What fits after the 40-character workspace prefix in PostgreSQL's 63-byte identifiers. */
export const MAX_LOGICAL_LENGTH = 23;
/** A table's logical name: a lower-case identifier of at most MAX_LOGICAL_LENGTH characters (isLogicalName). */
export const LOGICAL_NAME = /^[a-z_][a-z0-9_]{0,22}$/;
/**
 * Index and constraint names may be as long as PostgreSQL allows (63): nobody lists them by name, so a longer one
 * maps to a shortened physical name that ends in a digest of it (physicalName). Table names must read back as
 * written (listings, policies), so they keep the 23-character limit.
 */
const MAX_OBJECT_LENGTH = 63;
const OBJECT = /^[a-z_][a-z0-9_]{0,62}$/;
const hashedKinds = new Set(['index', 'constraint']);

/** Whether `name` is a valid logical name of a `what` (a table unless said otherwise). */
export const isLogicalName = (name: string, what = 'table'): boolean =>
  hashedKinds.has(what) ? OBJECT.test(name) && !PHYSICAL_LOOKING.test(name) : LOGICAL_NAME.test(name);

/** A name that spells a workspace prefix: never a logical name (it reads like another workspace's physical one). */
const PHYSICAL_LOOKING = /ws_[0-9a-f]{8}_[0-9a-f]{4}_/;

export const workspacePrefix = (workspaceId: string): string => `ws_${workspaceId.toLowerCase().replace(/-/g, '_')}_`;

export function assertLogicalName(logical: string, what = 'table'): void {
  if (!isLogicalName(logical, what)) {
    const max = hashedKinds.has(what) ? MAX_OBJECT_LENGTH : MAX_LOGICAL_LENGTH;
    throw new ServiceError(
      'INVALID_TABLE',
      `Invalid ${what} name: ${JSON.stringify(logical.slice(0, 80))}`,
      `${what} names are lower-case identifiers of at most ${max} characters ([a-z_][a-z0-9_]*)`,
    );
  }
}

/**
 * The physical name of a workspace object: the workspace prefix and the logical name; an index or constraint name
 * longer than MAX_LOGICAL_LENGTH keeps its first 14 characters and adds `_` and 8 hex characters of its SHA-256 —
 * the same name always maps to the same physical name, so CREATE, DROP and ON CONFLICT ON CONSTRAINT agree.
 */
export function physicalName(workspaceId: string, logical: string, what = 'table'): string {
  assertLogicalName(logical, what);
  if (logical.length <= MAX_LOGICAL_LENGTH) return workspacePrefix(workspaceId) + logical;
  const digest = createHash('sha256').update(logical).digest('hex').slice(0, 8);
  return `${workspacePrefix(workspaceId)}${logical.slice(0, MAX_LOGICAL_LENGTH - 9)}_${digest}`;
}

/** The PostgreSQL role that owns a workspace's tables and runs its SQL. */
export const workspaceRole = (workspaceId: string): string => `wds_ws_${workspaceId.toLowerCase().replace(/-/g, '')}`;

const ANY_PREFIX = /ws_[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}_/g;
const ANY_ROLE = /wds_ws_[0-9a-f]{32}/g;

/** Turns physical names in a database message back into logical ones; never shows another workspace's id. */
export const toLogicalText = (text: string): string =>
  text.replace(/"user_data"\./g, '').replace(/\buser_data\./g, '').replace(ANY_PREFIX, '').replace(ANY_ROLE, 'workspace role');
