import { createHash } from 'node:crypto';
import { type AuditEntry, auditInsert } from '@wds/audit';
import { CHANNEL } from '@wds/cache';
import { type Db, type SqlProposalRow, type Uuid, isUuid, newId, notifyOnCommit, sql } from '@wds/db';
import { conflict, notFound } from '@wds/errors';
import type { Proposer } from './modes.js';
import { type ProposalStatus, type SqlProposalView, toProposalView } from './views.js';

/** The bus topic of one proposal's changes (waiters wake on it, in every process). */
export const proposalTopic = (id: string): string => `sql_proposal:${id}`;
/** The bus topic of a workspace's new proposal (approvers' live notices over `/ws`). */
export const newProposalTopic = (workspaceId: string, id: string): string => `sql_proposals:${workspaceId}:${id}`;
const NEW_PROPOSAL = /^sql_proposals:([0-9a-f-]{36}):([0-9a-f-]{36})$/;
/** The workspace and proposal a bus topic announces, or undefined for any other topic. */
export function parseNewProposalTopic(topic: string): { workspaceId: string; id: string } | undefined {
  const m = NEW_PROPOSAL.exec(topic);
  return m ? { workspaceId: m[1] as string, id: m[2] as string } : undefined;
}

/** What the audit entries of a proposal's transitions name besides the people: the request and the interface. */
export interface RequestInfo {
  requestId: string | null;
  transport: 'http' | 'mcp';
}

export interface NewProposal {
  /** The preview's `proposal_id`, or a new one. */
  id?: string;
  workspaceId: string;
  proposer: Proposer;
  originalSql: string;
  transformedSql: string;
  operation: string;
  tables: string[];
  ttlMs: number;
}

const inTransaction = <T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> => (db.isTransaction ? fn(db) : db.transaction().execute(fn));

/** An audit entry of a proposal's transition, naming the proposal and whoever made it. */
function entry(action: string, p: { id: string; workspace_id: string }, actor: { userId: string; apiKeyId: string | null }, request: RequestInfo, details: Record<string, unknown>): AuditEntry {
  return {
    workspaceId: p.workspace_id,
    userId: actor.userId,
    apiKeyId: actor.apiKeyId,
    action,
    resourceType: 'sql_proposal',
    resourceId: p.id,
    details: { proposal_id: p.id, ...details },
    requestId: request.requestId,
    transport: request.transport,
  };
}

/** Publishes, on commit, that a proposal changed (and for a new one, that the workspace has one more). */
async function publish(trx: Db, p: { id: string; workspace_id: string }, isNew: boolean): Promise<void> {
  await notifyOnCommit(trx, CHANNEL, proposalTopic(p.id));
  if (isNew) await notifyOnCommit(trx, CHANNEL, newProposalTopic(p.workspace_id, p.id));
}

/**
 * Stores a proposal with its `propose_sql` audit entry, in one transaction. The API key's name is read here, so the
 * proposal still says which key it was after the key is renamed or deleted.
 */
export async function storeProposal(db: Db, p: NewProposal, request: RequestInfo): Promise<SqlProposalView> {
  return inTransaction(db, async (trx) => {
    const key = p.proposer.apiKeyId
      ? await trx.selectFrom('platform.api_keys').select('name').where('id', '=', p.proposer.apiKeyId).executeTakeFirst()
      : undefined;
    const row = await trx
      .insertInto('platform.sql_proposals')
      .values({
        id: p.id ?? newId(),
        workspace_id: p.workspaceId,
        proposed_by: p.proposer.userId,
        credential_kind: p.proposer.credential,
        api_key_id: p.proposer.apiKeyId,
        api_key_name: key?.name ?? null,
        via_mcp: p.proposer.viaMcp,
        original_sql: p.originalSql,
        transformed_sql: p.transformedSql,
        sql_sha256: sha256(p.transformedSql),
        operation: p.operation,
        affected_tables: p.tables,
        expires_at: sql<Date>`now() + make_interval(secs => ${p.ttlMs / 1000})`,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await auditInsert(trx, entry('propose_sql', row, p.proposer, request, { operation: row.operation, tables: row.affected_tables })).execute();
    await publish(trx, row, true);
    return toProposalView(row);
  });
}

export const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** A proposal of the workspace, or undefined (an id that is no UUID names none). */
export async function findProposal(db: Db, workspaceId: string, id: string): Promise<SqlProposalRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db.selectFrom('platform.sql_proposals').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export interface ProposalFilter {
  status?: ProposalStatus | undefined;
  /** Only this user's proposals (a member who approves nothing sees their own). */
  proposedBy?: string | undefined;
  limit: number;
  offset: number;
}

/** A workspace's proposals, newest first. `expired` and `pending` are told apart by the clock. */
export async function listProposals(db: Db, workspaceId: string, f: ProposalFilter): Promise<SqlProposalView[]> {
  let q = db.selectFrom('platform.sql_proposals').selectAll().where('workspace_id', '=', workspaceId);
  if (f.proposedBy) q = q.where('proposed_by', '=', f.proposedBy);
  if (f.status === 'pending') q = q.where('status', '=', 'pending').where('expires_at', '>', sql<Date>`now()`);
  else if (f.status === 'expired') q = q.where('status', '=', 'pending').where('expires_at', '<=', sql<Date>`now()`);
  else if (f.status) q = q.where('status', '=', f.status);
  const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).offset(f.offset).execute();
  const now = new Date();
  return rows.map((r) => toProposalView(r, now));
}

export interface Decision {
  approver: { userId: string; apiKeyId: string | null };
  comment: string | null;
}

/**
 * Decides a proposal that is still pending, in one UPDATE that only a pending, unexpired row passes: the row, or
 * undefined when it is not (any more).
 */
function decidePending(
  db: Db,
  workspaceId: string,
  id: string,
  set: { status: 'approved' | 'rejected'; decided_by: string; decision_comment: string | null },
): Promise<SqlProposalRow | undefined> {
  // A rejection ends the proposal; an approval is finished once its statement ran (finishApproved).
  const ends = set.status === 'rejected' ? { finished_at: sql<Date>`now()` } : {};
  return db
    .updateTable('platform.sql_proposals')
    .set({ ...set, ...ends, decided_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'pending')
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Takes a pending proposal for approval: one UPDATE from `pending`, so of any number of approvals at the same time,
 * in any processes, exactly one gets the row and runs it. 404 for none of the workspace's; 409 for one that is not
 * pending any more (decided, or expired).
 */
export async function claimForApproval(db: Db, workspaceId: string, id: Uuid, d: Decision): Promise<SqlProposalRow> {
  const row = await decidePending(db, workspaceId, id, { status: 'approved', decided_by: d.approver.userId, decision_comment: d.comment });
  if (row) {
    await publish(db, row, false);
    return row;
  }
  throw await notPending(db, workspaceId, id);
}

/** Why a proposal could not be decided: it is not there (404), or not pending any more (409, saying what it is). */
async function notPending(db: Db, workspaceId: string, id: string): Promise<Error> {
  const now = await findProposal(db, workspaceId, id);
  if (!now) return notFound('SQL proposal');
  const status = toProposalView(now).status;
  return conflict(`The proposal is ${status}`, status === 'expired' ? 'a new preview proposes the statement again' : 'only a pending proposal can be decided');
}

/** What running an approved proposal came to. */
export type Outcome =
  | { executed: { affectedRows: number | null; executedSql: string } }
  | { failed: { code: string; message: string } };

/** Records the end of an approved proposal's run, with the `approve_sql_proposal` entry naming both people. */
export async function finishApproved(
  db: Db,
  claimed: SqlProposalRow,
  outcome: Outcome,
  approver: Decision['approver'],
  request: RequestInfo,
): Promise<SqlProposalView> {
  return inTransaction(db, async (trx) => {
    const done =
      'executed' in outcome
        ? { status: 'executed' as const, affected_rows: outcome.executed.affectedRows, executed_sql: outcome.executed.executedSql }
        : { status: 'failed' as const, error_code: outcome.failed.code, error_message: outcome.failed.message };
    const row = await trx
      .updateTable('platform.sql_proposals')
      .set({ ...done, finished_at: sql<Date>`now()` })
      .where('id', '=', claimed.id)
      .where('status', '=', 'approved')
      .returningAll()
      .executeTakeFirstOrThrow();
    await auditInsert(
      trx,
      entry('approve_sql_proposal', row, approver, request, {
        proposed_by: row.proposed_by,
        approved_by: row.decided_by,
        outcome: row.status,
        ...(row.error_code ? { error_code: row.error_code } : {}),
      }),
    ).execute();
    await publish(trx, row, false);
    return toProposalView(row);
  });
}

/** Rejects a pending proposal (409 when it is not pending), with the `reject_sql_proposal` entry naming both people. */
export async function rejectProposal(db: Db, workspaceId: string, id: Uuid, d: Decision, request: RequestInfo): Promise<SqlProposalView> {
  return inTransaction(db, async (trx) => {
    const row = await decidePending(trx, workspaceId, id, {
      status: 'rejected',
      decided_by: d.approver.userId,
      decision_comment: d.comment,
    });
    if (!row) throw await notPending(trx, workspaceId, id);
    await auditInsert(trx, entry('reject_sql_proposal', row, d.approver, request, { proposed_by: row.proposed_by, rejected_by: row.decided_by })).execute();
    await publish(trx, row, false);
    return toProposalView(row);
  });
}

/**
 * Forgets proposals that ended (or expired) more than `retentionMs` ago, SQL_PROPOSAL_RETENTION_DAYS; their audit
 * entries stay. A proposal that never finished (`approved` when its process died) goes with its expiry's age. Returns
 * how many went.
 */
export async function pruneProposals(db: Db, retentionMs: number): Promise<number> {
  const r = await db
    .deleteFrom('platform.sql_proposals')
    .where(sql<boolean>`coalesce(finished_at, expires_at) < now() - make_interval(secs => ${retentionMs / 1000})`)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
