import { decide } from '@wds/policy-engine';
import type { SqlContext } from './context.js';
import type { SqlCaller } from './execute.js';

/**
 * How much of a table a caller's own reads cover, as their select policy decides it: `none` (no policy lets them
 * read it), `every` (an allow without condition and no conditional deny: every live row), `filtered` (some rows —
 * only a read as them tells which). What the service reports about a table's rows (counts, progress) is derived
 * from this, so it never tells a caller about rows their own SELECT would not return.
 */
export type ReadScope = 'none' | 'filtered' | 'every';

export function readScopeOf(ctx: SqlContext, caller: SqlCaller, table: string): ReadScope {
  if (!ctx.catalog.has(table)) return 'none';
  const d = decide({ policies: ctx.policies, groups: ctx.groups, subject: caller.subject, table, operation: 'select' });
  if (!d.allowed) return 'none';
  return d.filter === null ? 'every' : 'filtered';
}

/**
 * DDL is for workspace admins and members of the workspace's DDL policy group (docs/sql-and-policies.md#permissions);
 * never for an STF.
 */
export function mayRunDdlOf(ctx: SqlContext, caller: SqlCaller): boolean {
  const s = caller.subject;
  return s.kind === 'user' && (caller.isAdmin || ctx.ddlUserIds.includes(s.userId));
}
