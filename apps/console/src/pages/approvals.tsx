import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { sectionPath } from '../router.js';
import type { SectionProps, Workspace } from '../sections.js';
import { api } from '../session.js';
import { Link } from '../ui/link.js';
import { useLive } from '../ui/live.js';
import { useLoad } from '../ui/load.js';
import { Problem } from '../ui/problem.js';
import { when } from '../ui/values.js';
import { Code, Facts, Status, useMembers } from './workflows/shared.js';
import './approvals.css';

type Proposal = View<'SqlProposal'>;
type ProposalStatus = Proposal['status'];

/**
 * Approvals (docs/approvals.md): the inbox of pending SQL proposals, live over the realtime feed (a new proposal
 * arrives as `SqlProposalCreated`); one proposal with its statement as sent and as the rewriter runs it, approved
 * or rejected with a comment; the history of decided ones.
 */
export default function Page({ workspace, rest }: SectionProps) {
  return (
    <div class="auto approvals">
      <h1>Approvals</h1>
      {rest[0] ? <ProposalView workspace={workspace} id={rest[0]} /> : <Inbox workspace={workspace} />}
    </div>
  );
}

/** How the proposal came: an API key (by the name it had then), a session or a JWT, and whether over MCP. */
export const credentialText = (c: Proposal['credential']): string =>
  `${c.kind === 'api_key' ? `API key “${c.api_key_name ?? c.api_key_id ?? '?'}”` : c.kind === 'jwt' ? 'a JWT' : 'a signed-in session'}${c.via_mcp ? ', over MCP' : ', over HTTP'}`;

const list = (workspaceId: string, query: { status?: ProposalStatus; limit: number; offset: number }) =>
  ok(api.value.GET('/api/v1/workspaces/{id}/sql/proposals', { params: { path: { id: workspaceId }, query } }));

function Inbox({ workspace }: { workspace: Workspace }) {
  const who = useMembers(workspace.id);
  const pending = useLoad(() => list(workspace.id, { status: 'pending', limit: 200, offset: 0 }), [workspace.id]);
  const live = useSignal<boolean | null>(null);
  const notice = useSignal('');
  useLive(
    workspace.id,
    null,
    (m) => {
      if (m.type !== 'SqlProposalCreated') return;
      notice.value = `A new proposal arrived: ${m.data.operation} on ${m.data.affected_tables.join(', ') || 'no table'}.`;
      pending.reload();
    },
    (open) => (live.value = open),
  );

  // A proposal decided elsewhere (another approver, its proposer withdrawing it, its expiry) leaves at the next look.
  useEffect(() => {
    const t = setInterval(() => pending.reload(), 15_000);
    return () => clearInterval(t);
  }, [workspace.id]);

  const items = pending.data.value;
  return (
    <>
      <section aria-labelledby="inbox-h">
        <h2 id="inbox-h">Waiting for a decision</h2>
        {workspace.role !== 'admin' && (
          <p class="muted">You see the proposals you may decide on (as a member of the approvers' group) or your own; admins see all of them.</p>
        )}
        <p class="live" role="status">
          {live.value === null ? 'Connecting to the live feed…' : live.value ? 'Live: new proposals appear here as they are made.' : 'The live feed is not connected; it reconnects by itself.'}{' '}
          {notice.value}
        </p>
        <div class="row">
          <button type="button" onClick={() => pending.reload()}>
            Refresh the inbox
          </button>
        </div>
        <Problem error={pending.error.value} />
        {items === null ? (
          <p role="status">Loading…</p>
        ) : items.length === 0 ? (
          <p>Nothing waits for approval.</p>
        ) : (
          <ProposalTable caption={`Pending proposals (${items.length})`} items={items} who={who} workspaceId={workspace.id} pending />
        )}
      </section>
      <History workspace={workspace} who={who} />
    </>
  );
}

const PAGE = 25;

function History({ workspace, who }: { workspace: Workspace; who: (id: string | null) => string }) {
  const status = useSignal<'' | ProposalStatus>('');
  const offset = useSignal(0);
  const items = useLoad(
    () => list(workspace.id, { ...(status.value ? { status: status.value } : {}), limit: PAGE, offset: offset.value }),
    [workspace.id, status.value, offset.value],
  );
  const shown = (items.data.value ?? []).filter((p) => status.value !== '' || p.status !== 'pending');
  return (
    <section aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      <div class="row">
        <label for="history-status">Status</label>
        <select
          id="history-status"
          value={status.value}
          onChange={(e) => {
            status.value = (e.target as HTMLSelectElement).value as '' | ProposalStatus;
            offset.value = 0;
          }}
        >
          <option value="">Every decided one</option>
          <option value="executed">executed</option>
          <option value="failed">failed</option>
          <option value="rejected">rejected</option>
          <option value="expired">expired</option>
          <option value="approved">approved (running)</option>
          <option value="pending">pending</option>
        </select>
        <button type="button" onClick={() => items.reload()}>
          Refresh the history
        </button>
      </div>
      <Problem error={items.error.value} />
      {items.data.value === null ? (
        <p role="status">Loading…</p>
      ) : shown.length === 0 ? (
        <p>No proposals here{offset.value > 0 ? ' on this page' : ''}.</p>
      ) : (
        <ProposalTable caption="Decided proposals, newest first" items={shown} who={who} workspaceId={workspace.id} />
      )}
      <nav class="row" aria-label="Pages of the history">
        <button type="button" disabled={offset.value === 0} onClick={() => (offset.value = Math.max(0, offset.value - PAGE))}>
          Newer
        </button>
        <button type="button" disabled={(items.data.value?.length ?? 0) < PAGE} onClick={() => (offset.value += PAGE)}>
          Older
        </button>
      </nav>
    </section>
  );
}

function ProposalTable({
  caption,
  items,
  who,
  workspaceId,
  pending,
}: {
  caption: string;
  items: Proposal[];
  who: (id: string | null) => string;
  workspaceId: string;
  pending?: boolean;
}) {
  return (
    <div class="scroll">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Proposed</th>
            <th scope="col">By</th>
            <th scope="col">Statement</th>
            <th scope="col">Tables</th>
            <th scope="col">{pending ? 'Expires' : 'Outcome'}</th>
            <th scope="col">Open</th>
          </tr>
        </thead>
        <tbody>
          {items.map((p) => (
            <tr key={p.id}>
              <td>{when(p.created_at)}</td>
              <td class="text" dir="auto">
                {who(p.proposed_by)}
                <br />
                <span class="muted">{credentialText(p.credential)}</span>
              </td>
              <td class="text sql" dir="auto">
                {p.original_sql.length > 400 ? `${p.original_sql.slice(0, 400)}…` : p.original_sql}
              </td>
              <td class="text" dir="auto">
                {p.affected_tables.join(', ')}
              </td>
              <td>
                {pending ? (
                  when(p.expires_at)
                ) : (
                  <>
                    <Status value={p.status} />
                    {p.affected_rows !== null && ` ${p.affected_rows} rows`}
                  </>
                )}
              </td>
              <td>
                <Link to={sectionPath(workspaceId, 'approvals', p.id)}>{pending ? `Review the ${p.operation}` : `View the ${p.operation}`}</Link>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ProposalView({ workspace, id }: { workspace: Workspace; id: string }) {
  const who = useMembers(workspace.id);
  const proposal = useLoad(
    () => ok(api.value.GET('/api/v1/workspaces/{id}/sql/proposals/{proposalId}', { params: { path: { id: workspace.id, proposalId: id } } })),
    [workspace.id, id],
  );
  const comment = useSignal('');
  const busy = useSignal(false);
  const failed = useSignal<unknown>(null);
  const done = useSignal('');

  const decide = async (how: 'approve' | 'reject') => {
    busy.value = true;
    failed.value = null;
    done.value = '';
    const body = comment.value.trim() ? { comment: comment.value } : {};
    const path = { id: workspace.id, proposalId: id };
    try {
      if (how === 'approve') {
        const r = await ok(api.value.POST('/api/v1/workspaces/{id}/sql/proposals/{proposalId}/approve', { params: { path }, body }));
        proposal.data.value = r.proposal;
        const n = r.proposal.affected_rows ?? ('affected_rows' in r ? r.affected_rows : r.rows.length);
        done.value = `Approved: the statement ran once, ${n} ${n === 1 ? 'row' : 'rows'} affected.`;
      } else {
        proposal.data.value = await ok(api.value.POST('/api/v1/workspaces/{id}/sql/proposals/{proposalId}/reject', { params: { path }, body }));
        done.value = 'Rejected: the statement did not run.';
      }
    } catch (err) {
      failed.value = err;
      // A failed run of an approved statement ends the proposal `failed`: show it as it is now.
      await proposal.reload();
    } finally {
      busy.value = false;
    }
  };

  const p = proposal.data.value;
  return (
    <>
      <p>
        <Link to={sectionPath(workspace.id, 'approvals')}>Back to the inbox</Link>
      </p>
      <Problem error={proposal.error.value} />
      {p === null ? (
        !proposal.error.value && <p role="status">Loading…</p>
      ) : (
        <section aria-labelledby="proposal-h">
          <h2 id="proposal-h">
            Proposal: {p.operation} on {p.affected_tables.join(', ') || 'no table'}
          </h2>
          <Facts
            label="The proposal"
            items={[
              ['Status', <Status key="s" value={p.status} />],
              ['Proposed by', who(p.proposed_by)],
              ['Through', credentialText(p.credential)],
              ['Affected tables', p.affected_tables.join(', ')],
              ['Proposed', when(p.created_at)],
              ['Expires', when(p.expires_at)],
              ...(p.decided_by ? ([['Decided by', who(p.decided_by)] as [string, string], ['Decided', when(p.decided_at)] as [string, string]]) : []),
              ...(p.decision_comment !== null ? ([['Comment', p.decision_comment]] as [string, string][]) : []),
              ...(p.affected_rows !== null ? ([['Rows affected', String(p.affected_rows)]] as [string, string][]) : []),
              ...(p.error_code !== null || p.error_message !== null ? ([['Error', `${p.error_code ?? ''} ${p.error_message ?? ''}`.trim()]] as [string, string][]) : []),
              ...(p.finished_at ? ([['Finished', when(p.finished_at)]] as [string, string][]) : []),
            ]}
          />
          <h3>The statement as sent</h3>
          <Code text={p.original_sql} label="The statement as sent" />
          <h3>As the rewriter runs it</h3>
          <Code text={p.transformed_sql} label="The transformed statement" />
          {p.executed_sql && (
            <>
              <h3>As it ran</h3>
              <Code text={p.executed_sql} label="The executed statement" />
            </>
          )}
          {done.value && (
            <p role="status" class="notice">
              {done.value}
            </p>
          )}
          <Problem error={failed.value} />
          {p.status === 'pending' && (
            <form
              class="stack decide"
              onSubmit={(e) => {
                e.preventDefault();
                decide('approve');
              }}
            >
              <label for="decision-comment">Comment (optional, kept with the decision)</label>
              <textarea id="decision-comment" rows={3} maxLength={10_000} value={comment.value} onInput={(e) => (comment.value = (e.target as HTMLTextAreaElement).value)} />
              <div class="row">
                <button type="submit" class="primary" disabled={busy.value}>
                  Approve and run
                </button>
                <button type="button" class="danger" disabled={busy.value} onClick={() => decide('reject')}>
                  Reject
                </button>
              </div>
            </form>
          )}
        </section>
      )}
    </>
  );
}
