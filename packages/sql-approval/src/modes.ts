import type { SqlApprovalAppliesTo, SqlApprovalMode } from '@wds/db';

/** Who sends a statement, as far as approval cares: the credential and the interface. */
export interface Proposer {
  userId: string;
  credential: 'session' | 'jwt' | 'api_key';
  apiKeyId: string | null;
  /** The statement came over MCP (an agent host), whatever the credential. */
  viaMcp: boolean;
}

/** A statement's kind as the analyser saw it: its operation, and whether a SELECT writes (a data-modifying WITH). */
export interface StatementNature {
  operation: 'select' | 'insert' | 'update' | 'delete' | 'ddl';
  writes: boolean;
}

/** Agents are API keys and MCP sessions (docs/approvals.md#modes): no person sits behind each of their calls. */
export const isAgent = (p: Proposer): boolean => p.credential === 'api_key' || p.viaMcp;

/** Whether a statement changes anything: every non-SELECT, and a SELECT that writes. What a proposal is made of. */
export const changes = (s: StatementNature): boolean => s.operation !== 'select' || s.writes;

/**
 * Whether a statement waits for a person instead of running (docs/approvals.md#modes). `none` runs everything at
 * once (the specification's behaviour); `write_only` holds what changes rows, `ddl_only` schema changes, `all` both.
 * Reads never wait. `agents` holds only API keys' and MCP sessions' statements; `everyone` every statement.
 */
export function needsApproval(
  settings: { sql_approval_mode: SqlApprovalMode; sql_approval_applies_to: SqlApprovalAppliesTo },
  statement: StatementNature,
  proposer: Proposer,
): boolean {
  const mode = settings.sql_approval_mode;
  if (mode === 'none' || !changes(statement)) return false;
  if (settings.sql_approval_applies_to === 'agents' && !isAgent(proposer)) return false;
  if (mode === 'all') return true;
  return mode === 'ddl_only' ? statement.operation === 'ddl' : statement.operation !== 'ddl';
}
