// Issue 31, part 1: stored SQL proposals and their approval (docs/approvals.md), through the real endpoints.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { pruneProposals } from '@wds/sql-approval';
import WebSocket from 'ws';
import { Harness, describe, eventually, expect, test } from './support.js';

type User = Awaited<ReturnType<Harness['user']>>;

const settings = (h: Harness, token: string, id: string, body: Record<string, unknown>) => h.call('PATCH', `/api/v1/workspaces/${id}`, { token, body });
const proposals = (ws: string) => `/api/v1/workspaces/${ws}/sql/proposals`;
const apiKey = async (h: Harness, u: User) => (await h.call('POST', '/api/v1/api-keys', { token: u.token, body: { name: `agent of ${u.name}` } })).body as { id: string; key: string };

/** A workspace with a table `notes`, its owner, a second member, both allowed everything on it. */
async function setUp(h: Harness) {
  const owner = await h.user('owner');
  const ws = await h.workspace(owner.token, 'Approvals');
  const member = await h.user('member');
  await h.addMember(owner.token, ws.id, member.email);
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (id serial PRIMARY KEY, body text, owner_id uuid)');
  const group = await h.allowAll(owner.token, ws.id, [owner.id, member.id], ['notes']);
  return { owner, ws, member, group };
}

const count = async (h: Harness, token: string, ws: string) => (await h.sqlOk(token, ws, 'SELECT count(*)::int AS n FROM notes')).rows[0].n as number;

describe('SQL proposals', () => {
  test('every preview of a statement that changes something stores its proposal; a read stores none', async ({ h }) => {
    const { owner, ws } = await setUp(h);
    const preview = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, { token: owner.token, body: { sql: "INSERT INTO notes (body) VALUES ('a')" } });
    expect(preview.status).toBe(200);
    expect(preview.body.requires_approval).toBe(true);
    const stored = await h.call('GET', `${proposals(ws.id)}/${preview.body.proposal_id}`, { token: owner.token });
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({
      id: preview.body.proposal_id,
      status: 'pending',
      proposed_by: owner.id,
      credential: { kind: 'session', api_key_id: null, api_key_name: null, via_mcp: false },
      original_sql: "INSERT INTO notes (body) VALUES ('a')",
      transformed_sql: preview.body.transformed_sql,
      operation: 'insert',
      affected_tables: ['notes'],
    });
    expect(stored.body.sql_sha256).toMatch(/^[0-9a-f]{64}$/);
    const hours = (Date.parse(stored.body.expires_at) - Date.parse(stored.body.created_at)) / 3600_000;
    expect(hours).toBeCloseTo(24, 1);

    const read = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql/preview`, { token: owner.token, body: { sql: 'SELECT * FROM notes' } });
    expect(read.body.requires_approval).toBe(false);
    expect((await h.call('GET', `${proposals(ws.id)}/${read.body.proposal_id}`, { token: owner.token })).status).toBe(404);
    // Proposing a read outright is refused; nothing is stored.
    const refused = await h.call('POST', proposals(ws.id), { token: owner.token, body: { sql: 'SELECT 1' } });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('BAD_REQUEST');
  });

  test('approval runs the stored statement as its proposer, once, and both people are in the audit log', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const proposed = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('from member')" } });
    expect(proposed.status).toBe(201);
    expect(await count(h, owner.token, ws.id)).toBe(0);

    const approved = await h.call('POST', `${proposals(ws.id)}/${proposed.body.id}/approve`, { token: owner.token, body: { comment: 'fine' } });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.affected_rows).toBe(1);
    expect(approved.body.executed_sql).toContain('INSERT INTO');
    expect(approved.body.proposal).toMatchObject({ status: 'executed', decided_by: owner.id, decision_comment: 'fine', affected_rows: 1, error_code: null });
    expect(await count(h, owner.token, ws.id)).toBe(1);

    const again = await h.call('POST', `${proposals(ws.id)}/${proposed.body.id}/approve`, { token: owner.token, body: {} });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('CONFLICT');
    expect(await count(h, owner.token, ws.id)).toBe(1);

    const audit = await h.call('GET', '/api/v1/audit-logs?limit=100', { token: owner.token, workspace: ws.id });
    const items: any[] = audit.body.items ?? audit.body;
    const of = (action: string) => items.filter((e) => e.action === action && JSON.stringify(e.details).includes(proposed.body.id));
    expect(of('propose_sql')).toHaveLength(1);
    expect(of('propose_sql')[0].user_id).toBe(member.id);
    expect(of('approve_sql_proposal')).toHaveLength(1);
    expect(of('approve_sql_proposal')[0]).toMatchObject({ user_id: owner.id, details: { proposed_by: member.id, approved_by: owner.id, outcome: 'executed' } });
    // The statement's own entry, written in its transaction, is the proposer's and names the proposal.
    expect(of('execute_sql_insert')).toHaveLength(1);
    expect(of('execute_sql_insert')[0]).toMatchObject({ user_id: member.id, details: { proposal_id: proposed.body.id, approved_by: owner.id, affected_rows: 1 } });
  });

  test('approved twice at once, in one process and in two, the statement runs once', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const admin2 = await h.user('admin2');
    await h.addMember(owner.token, ws.id, admin2.email, 'admin');
    const other = await Harness.create({}, h.url);
    try {
      for (const round of [0, 1, 2]) {
        const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: `INSERT INTO notes (body) VALUES ('round ${round}')` } });
        const path = `${proposals(ws.id)}/${p.body.id}/approve`;
        const answers = await Promise.all([
          h.call('POST', path, { token: owner.token, body: {} }),
          h.call('POST', path, { token: admin2.token, body: {} }),
          other.call('POST', path, { token: owner.token, body: {} }),
          other.call('POST', path, { token: admin2.token, body: {} }),
        ]);
        expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409]);
      }
      const rows = (await h.sqlOk(owner.token, ws.id, 'SELECT body FROM notes ORDER BY id')).rows.map((r: any) => r.body);
      expect(rows).toEqual(['round 0', 'round 1', 'round 2']);
    } finally {
      await other.close();
    }
  });

  test('the policies in force at approval decide: a policy removed since the proposal denies it, and it ends failed', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('late')" } });
    // The member's insert policy goes: only the owner keeps one.
    const policies = await h.call('GET', '/api/v1/policies', { token: owner.token, workspace: ws.id });
    const insert = (policies.body.items ?? policies.body).find((x: any) => x.table_name === 'notes' && x.operation === 'insert');
    expect((await h.call('DELETE', `/api/v1/policies/${insert.id}`, { token: owner.token, workspace: ws.id })).status).toBeLessThan(300);
    const g = await h.group(owner.token, ws.id, { name: 'owner only', user_ids: [owner.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'notes', operation: 'insert' });

    const approved = await h.call('POST', `${proposals(ws.id)}/${p.body.id}/approve`, { token: owner.token, body: {} });
    expect(approved.status).toBe(403);
    expect(approved.body.code).toBe('POLICY_DENIED');
    const after = await h.call('GET', `${proposals(ws.id)}/${p.body.id}`, { token: owner.token });
    expect(after.body).toMatchObject({ status: 'failed', error_code: 'POLICY_DENIED', affected_rows: null });
    expect(await count(h, owner.token, ws.id)).toBe(0);
  });

  test('nobody approves their own proposal unless sql_self_approval; members who approve nothing see only their own', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const own = await h.call('POST', proposals(ws.id), { token: owner.token, body: { sql: "INSERT INTO notes (body) VALUES ('mine')" } });
    const self = await h.call('POST', `${proposals(ws.id)}/${own.body.id}/approve`, { token: owner.token, body: {} });
    expect(self.status).toBe(403);
    expect(self.body.code).toBe('FORBIDDEN');
    expect((await h.call('GET', `${proposals(ws.id)}/${own.body.id}`, { token: owner.token })).body.status).toBe('pending');

    // A plain member cannot approve, nor see the owner's proposal.
    expect((await h.call('POST', `${proposals(ws.id)}/${own.body.id}/approve`, { token: member.token, body: {} })).status).toBe(404);
    expect((await h.call('GET', `${proposals(ws.id)}/${own.body.id}`, { token: member.token })).status).toBe(404);
    const mine = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('member')" } });
    const listed = await h.call('GET', proposals(ws.id), { token: member.token });
    expect(listed.body.map((x: any) => x.id)).toEqual([mine.body.id]);
    expect((await h.call('POST', `${proposals(ws.id)}/${mine.body.id}/approve`, { token: member.token, body: {} })).status).toBe(403);
    // The owner (an approver) lists both.
    const all = await h.call('GET', proposals(ws.id), { token: owner.token });
    expect(all.body.map((x: any) => x.id).sort()).toEqual([own.body.id, mine.body.id].sort());

    expect((await settings(h, owner.token, ws.id, { sql_self_approval: true })).body.sql_self_approval).toBe(true);
    const ok = await h.call('POST', `${proposals(ws.id)}/${own.body.id}/approve`, { token: owner.token, body: {} });
    expect(ok.status).toBe(200);
    expect(ok.body.proposal.status).toBe('executed');
  });

  test('members of sql_approver_policy_group_id approve; a group in use cannot be deleted', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const reviewer = await h.user('reviewer');
    await h.addMember(owner.token, ws.id, reviewer.email);
    const approvers = await h.group(owner.token, ws.id, { name: 'approvers', user_ids: [reviewer.id] });
    const patched = await settings(h, owner.token, ws.id, { sql_approver_policy_group_id: approvers });
    expect(patched.body.sql_approver_policy_group_id).toBe(approvers);
    const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "UPDATE notes SET body = 'x'" } });
    expect((await h.call('GET', proposals(ws.id), { token: reviewer.token })).body.map((x: any) => x.id)).toContain(p.body.id);
    const ok = await h.call('POST', `${proposals(ws.id)}/${p.body.id}/approve`, { token: reviewer.token, body: {} });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.proposal.decided_by).toBe(reviewer.id);
    const del = await h.call('DELETE', `/api/v1/policy-groups/${approvers}`, { token: owner.token, workspace: ws.id });
    expect(del.status).toBe(409);
    expect(del.body.details).toContain('sql_approver_policy_group_id');
    const bad = await settings(h, owner.token, ws.id, { sql_approver_policy_group_id: '01900000-0000-7000-8000-000000000000' });
    expect(bad.status).toBe(400);
  });

  test('reject and withdraw: a rejected proposal never runs; an expired one is expired and cannot be decided', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "DELETE FROM notes WHERE body = 'x'" } });
    const rejected = await h.call('POST', `${proposals(ws.id)}/${p.body.id}/reject`, { token: owner.token, body: { comment: 'no' } });
    expect(rejected.status).toBe(200);
    expect(rejected.body).toMatchObject({ status: 'rejected', decided_by: owner.id, decision_comment: 'no' });
    expect((await h.call('POST', `${proposals(ws.id)}/${p.body.id}/approve`, { token: owner.token, body: {} })).status).toBe(409);

    const mine = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('w')" } });
    const withdrawn = await h.call('POST', `${proposals(ws.id)}/${mine.body.id}/reject`, { token: member.token, body: {} });
    expect(withdrawn.body.status).toBe('rejected');

    const old = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('old')" } });
    await h.services.db.updateTable('platform.sql_proposals').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', old.body.id).execute();
    expect((await h.call('GET', `${proposals(ws.id)}/${old.body.id}`, { token: owner.token })).body.status).toBe('expired');
    const late = await h.call('POST', `${proposals(ws.id)}/${old.body.id}/approve`, { token: owner.token, body: {} });
    expect(late.status).toBe(409);
    expect(late.body.error).toContain('expired');
    const expired = await h.call('GET', `${proposals(ws.id)}?status=expired`, { token: owner.token });
    expect(expired.body.map((x: any) => x.id)).toEqual([old.body.id]);
    const pending = await h.call('GET', `${proposals(ws.id)}?status=pending`, { token: owner.token });
    expect(pending.body.map((x: any) => x.id)).not.toContain(old.body.id);
    expect(await count(h, owner.token, ws.id)).toBe(0);
    expect((await h.call('GET', `${proposals(ws.id)}?status=nonsense`, { token: owner.token })).status).toBe(400);

    // The sweep forgets what ended longer ago than the retention, and nothing younger or still pending.
    const live = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('live')" } });
    await h.services.db.updateTable('platform.sql_proposals').set({ finished_at: new Date(Date.now() - 91 * 86_400_000) }).where('id', '=', p.body.id).execute();
    await h.services.db.updateTable('platform.sql_proposals').set({ expires_at: new Date(Date.now() - 91 * 86_400_000) }).where('id', '=', old.body.id).execute();
    expect(await pruneProposals(h.services.db, 90 * 86_400_000)).toBe(2);
    const left = await h.call('GET', proposals(ws.id), { token: owner.token });
    expect(left.body.map((x: any) => x.id).sort()).toEqual([mine.body.id, live.body.id].sort());
  });

  test('write_only for agents: an API key\'s INSERT answers 202 APPROVAL_REQUIRED and writes nothing until approved; a session\'s runs at once', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const patched = await settings(h, owner.token, ws.id, { sql_approval_mode: 'write_only' });
    expect(patched.body).toMatchObject({ sql_approval_mode: 'write_only', sql_approval_applies_to: 'agents', sql_self_approval: false });
    const key = await apiKey(h, member);

    const held = await h.sql(key.key, ws.id, "INSERT INTO notes (body) VALUES ('agent')");
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({ code: 'APPROVAL_REQUIRED', proposal: { status: 'pending', credential: { kind: 'api_key', api_key_id: key.id, api_key_name: 'agent of member' } } });
    expect(await count(h, owner.token, ws.id)).toBe(0);
    // Reads and sessions are not held.
    expect((await h.sql(key.key, ws.id, 'SELECT count(*) FROM notes')).status).toBe(200);
    expect((await h.sql(member.token, ws.id, "INSERT INTO notes (body) VALUES ('person')")).status).toBe(200);
    expect(await count(h, owner.token, ws.id)).toBe(1);
    // DDL is not a write in write_only.
    expect((await h.sql(key.key, ws.id, 'CREATE TABLE other (id int)')).status).toBe(403); // the member may not run DDL at all

    const approved = await h.call('POST', `${proposals(ws.id)}/${held.body.proposal.id}/approve`, { token: owner.token, body: {} });
    expect(approved.status).toBe(200);
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT body FROM notes ORDER BY id')).rows.map((r: any) => r.body)).toEqual(['person', 'agent']);

    // everyone: the session is held too; ddl_only lets writes through and holds DDL.
    await settings(h, owner.token, ws.id, { sql_approval_applies_to: 'everyone' });
    expect((await h.sql(member.token, ws.id, "INSERT INTO notes (body) VALUES ('held')")).status).toBe(202);
    await settings(h, owner.token, ws.id, { sql_approval_mode: 'ddl_only' });
    expect((await h.sql(member.token, ws.id, "INSERT INTO notes (body) VALUES ('runs')")).status).toBe(200);
    const ddl = await h.sql(owner.token, ws.id, 'CREATE TABLE later (id int)');
    expect(ddl.status).toBe(202);
    expect(ddl.body.proposal.operation).toBe('ddl');
    await settings(h, owner.token, ws.id, { sql_approval_mode: 'none' });
    expect((await h.sql(member.token, ws.id, "INSERT INTO notes (body) VALUES ('free')")).status).toBe(200);
    expect((await settings(h, owner.token, ws.id, { sql_approval_mode: 'sometimes' })).status).toBe(400);
  });

  test('the proposer can wait for the decision (?wait=), also when another process decides', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const other = await Harness.create({}, h.url);
    try {
      const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('waited')" } });
      const waiting = h.call('GET', `${proposals(ws.id)}/${p.body.id}?wait=30`, { token: member.token });
      // The waiter has not answered: nothing has changed yet.
      const raced = await Promise.race([waiting.then(() => 'answered'), new Promise((r) => setImmediate(() => r('waiting')))]);
      expect(raced).toBe('waiting');
      const approved = await other.call('POST', `${proposals(ws.id)}/${p.body.id}/approve`, { token: owner.token, body: {} });
      expect(approved.status).toBe(200);
      const answer = await waiting;
      expect(answer.status).toBe(200);
      expect(['approved', 'executed']).toContain(answer.body.status);
      // A short wait on a proposal nobody decides answers with it unchanged.
      const q = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('idle')" } });
      expect((await h.call('GET', `${proposals(ws.id)}/${q.body.id}?wait=1`, { token: member.token })).body.status).toBe('pending');
      expect((await h.call('GET', `${proposals(ws.id)}/${q.body.id}?wait=61`, { token: member.token })).status).toBe(400);
    } finally {
      await other.close();
    }
  });

  test('a proposer no longer a member: the approval fails and nothing runs', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('gone')" } });
    const members = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    const m = members.body.find((x: any) => x.user_id === member.id);
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${m.id}`, { token: owner.token })).status).toBe(204);
    const approved = await h.call('POST', `${proposals(ws.id)}/${p.body.id}/approve`, { token: owner.token, body: {} });
    expect(approved.status).toBe(403);
    expect((await h.call('GET', `${proposals(ws.id)}/${p.body.id}`, { token: owner.token })).body).toMatchObject({ status: 'failed', error_code: 'FORBIDDEN' });
    expect(await count(h, owner.token, ws.id)).toBe(0);
  });

  test("another workspace's proposals are 404 everywhere, and listing shows none of them", async ({ h }) => {
    const a = await setUp(h);
    const b = await setUp(h);
    const p = await h.call('POST', proposals(a.ws.id), { token: a.member.token, body: { sql: "INSERT INTO notes (body) VALUES ('a')" } });
    for (const [method, suffix] of [['GET', ''], ['POST', '/approve'], ['POST', '/reject']] as const) {
      const r = await h.call(method, `${proposals(b.ws.id)}/${p.body.id}${suffix}`, { token: b.owner.token, body: method === 'POST' ? {} : undefined });
      expect(r.status, `${method} ${suffix}`).toBe(404);
      expect(JSON.stringify(r.body)).not.toContain('INSERT');
    }
    // B's owner is no member of A: 403 before anything is looked up.
    expect((await h.call('GET', `${proposals(a.ws.id)}/${p.body.id}`, { token: b.owner.token })).status).toBe(403);
    expect((await h.call('GET', proposals(b.ws.id), { token: b.owner.token })).body).toEqual([]);
    expect((await h.call('GET', `${proposals(a.ws.id)}/${p.body.id}`, { token: a.owner.token })).body.status).toBe('pending');
    expect(await count(h, a.owner.token, a.ws.id)).toBe(0);
  });

  test('hostile text in the SQL and the comments is kept and shown as text, and runs as the value it is', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const value = "x'); DROP TABLE notes; -- $$ /* $t$ \\ */";
    const statement = `INSERT INTO notes (body) VALUES ('${value.replace(/'/g, "''")}')`;
    const comment = "'); DELETE FROM platform.sql_proposals; -- $$ /* <script>";
    const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: statement } });
    expect(p.body.original_sql).toBe(statement);
    const approved = await h.call('POST', `${proposals(ws.id)}/${p.body.id}/approve`, { token: owner.token, body: { comment } });
    expect(approved.status).toBe(200);
    expect(approved.body.proposal.decision_comment).toBe(comment);
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT body FROM notes')).rows).toEqual([{ body: value }]);
    const listed = await h.call('GET', proposals(ws.id), { token: owner.token });
    expect(listed.body[0]).toMatchObject({ original_sql: statement, decision_comment: comment });
  });
});

describe('SQL proposals over MCP', () => {
  test('propose, list, get, approve and reject are tools; an MCP session is an agent, whatever its credential', async ({ h, base }) => {
    const { owner, ws, member } = await setUp(h);
    await settings(h, owner.token, ws.id, { sql_approval_mode: 'all' });
    const connect = async (token: string) => {
      const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}`, 'x-workspace-id': ws.id } } });
      const client = new Client({ name: 'wds-test', version: '1.0.0' });
      await client.connect(transport);
      return client;
    };
    const agent = await connect(member.token);
    const person = await connect(owner.token);
    try {
      const names = (await agent.listTools()).tools.map((t) => t.name);
      for (const n of ['propose_sql', 'get_sql_proposal', 'list_sql_proposals', 'approve_sql_proposal', 'reject_sql_proposal']) expect(names).toContain(n);
      const call = async (c: Client, name: string, args: Record<string, unknown>) => (await c.callTool({ name, arguments: { id: ws.id, ...args } })) as any;
      // A session token's statement over MCP is held (MCP sessions are agents).
      const held = await call(agent, 'execute_sql', { sql: "INSERT INTO notes (body) VALUES ('mcp')" });
      expect(held.isError ?? false).toBe(false);
      const heldBody = held.structuredContent ?? JSON.parse(held.content[0].text);
      expect(heldBody).toMatchObject({ code: 'APPROVAL_REQUIRED', proposal: { credential: { kind: 'session', via_mcp: true } } });
      expect(await count(h, owner.token, ws.id)).toBe(0);

      const proposed = await call(agent, 'propose_sql', { sql: "UPDATE notes SET body = 'y'" });
      const pid = (proposed.structuredContent ?? JSON.parse(proposed.content[0].text)).id;
      const listed = await call(person, 'list_sql_proposals', {});
      expect(JSON.stringify(listed.structuredContent ?? listed.content)).toContain(pid);
      const got = await call(agent, 'get_sql_proposal', { proposalId: pid, wait: 0 });
      expect((got.structuredContent ?? JSON.parse(got.content[0].text)).status).toBe('pending');
      const rejected = await call(person, 'reject_sql_proposal', { proposalId: pid, comment: 'no' });
      expect((rejected.structuredContent ?? JSON.parse(rejected.content[0].text)).status).toBe('rejected');
      const approved = await call(person, 'approve_sql_proposal', { proposalId: heldBody.proposal.id });
      expect(approved.isError ?? false).toBe(false);
      expect(await count(h, owner.token, ws.id)).toBe(1);
    } finally {
      await agent.close();
      await person.close();
    }
  });
});

/** A WebSocket on `/ws` of the workspace, collecting what it receives; resolves once connected. */
function listen(base: string, token: string, workspaceId: string): Promise<{ socket: WebSocket; messages: any[] }> {
  const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/ws?workspace_id=${workspaceId}`, { headers: { authorization: `Bearer ${token}` } });
  const messages: any[] = [];
  return new Promise((resolve, reject) => {
    socket.on('message', (data) => {
      const m = JSON.parse(data.toString());
      messages.push(m);
      if (m.type === 'connected') resolve({ socket, messages });
    });
    socket.on('error', reject);
  });
}

describe('approvers are told over /ws', () => {
  test('a new proposal reaches those who may approve it, in every process, and nobody else', async ({ h, base }) => {
    const { owner, ws, member } = await setUp(h);
    const reviewer = await h.user('reviewer');
    await h.addMember(owner.token, ws.id, reviewer.email);
    const approvers = await h.group(owner.token, ws.id, { name: 'approvers', user_ids: [reviewer.id] });
    await settings(h, owner.token, ws.id, { sql_approver_policy_group_id: approvers });
    const other = await Harness.create({}, h.url);
    const otherBase = await other.listen();
    const admin = await listen(base, owner.token, ws.id);
    const inGroup = await listen(otherBase, reviewer.token, ws.id);
    const proposer = await listen(base, member.token, ws.id);
    try {
      const p = await h.call('POST', proposals(ws.id), { token: member.token, body: { sql: "INSERT INTO notes (body) VALUES ('tell')" } });
      const notice = (c: { messages: any[] }) => c.messages.find((m) => m.type === 'SqlProposalCreated');
      await eventually(async () => notice(admin) !== undefined && notice(inGroup) !== undefined, 10_000);
      expect(notice(admin).data).toEqual({
        proposal_id: p.body.id,
        operation: 'insert',
        affected_tables: ['notes'],
        proposed_by: member.id,
        created_at: p.body.created_at,
        expires_at: p.body.expires_at,
      });
      // Not its text: the notice says where to look, an approver reads it with GET.
      expect(JSON.stringify(notice(admin))).not.toContain('INSERT');
      // The proposer approves nothing: a ping answered after the notices went out shows none came.
      proposer.socket.send(JSON.stringify({ type: 'ping' }));
      await eventually(async () => proposer.messages.some((m) => m.type === 'pong'), 5000);
      expect(notice(proposer)).toBeUndefined();
    } finally {
      for (const c of [admin, inGroup, proposer]) c.socket.close();
      await other.close();
    }
  });
});

describe('the workspace settings of SQL approval', () => {
  test('are answered with the workspace and only admins change them', async ({ h }) => {
    const { owner, ws, member } = await setUp(h);
    const got = await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: member.token });
    expect(got.body).toMatchObject({ sql_approval_mode: 'none', sql_approval_applies_to: 'agents', sql_approver_policy_group_id: null, sql_self_approval: false });
    expect((await settings(h, member.token, ws.id, { sql_approval_mode: 'all' })).status).toBe(403);
    expect((await settings(h, owner.token, ws.id, { sql_approval_applies_to: 'robots' })).status).toBe(400);
    // The workspace role that runs user SQL cannot read the proposals table.
    const probe = await h.sql(owner.token, ws.id, 'SELECT * FROM platform.sql_proposals');
    expect(probe.status).toBe(400);
  });
});
