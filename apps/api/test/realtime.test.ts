import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Harness, eventually, until } from './support.js';

/**
 * GET /ws: policy-filtered realtime (docs/automation.md, "Realtime"). Real servers on 127.0.0.1, real WebSockets,
 * two API processes on one database (each its own services, pools and LISTEN connection).
 */

interface Message {
  type: string;
  data?: any;
}
interface Client {
  socket: WebSocket;
  messages: Message[];
  closed: Promise<{ code: number; reason: string }>;
  /** Row events received so far, compactly: `RowInserted:orders:<name>`, `RowDeleted:orders:<id>`. */
  rows(): string[];
}

const wsUrl = (base: string, query: Record<string, string> = {}) => {
  const u = new URL('/ws', base.replace(/^http/, 'ws'));
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return u.toString();
};

/** Opens a WebSocket and waits for `connected`; rejects with the refusal's status and body otherwise. */
function connect(base: string, opts: { token?: string; workspace?: string; query?: Record<string, string> }): Promise<Client> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.workspace) headers['x-workspace-id'] = opts.workspace;
  const socket = new WebSocket(wsUrl(base, opts.query), { headers });
  const messages: Message[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const client: Client = {
    socket,
    messages,
    closed,
    rows: () =>
      messages
        .filter((m) => m.type.startsWith('Row'))
        .map((m) => `${m.type}:${m.data.table_name}:${m.type === 'RowDeleted' ? m.data.id : m.data.row.name}`),
  };
  return new Promise((resolve, reject) => {
    socket.on('message', (data) => {
      const m = JSON.parse(data.toString()) as Message;
      messages.push(m);
      if (m.type === 'connected') resolve(client);
    });
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body) })));
    });
    socket.on('error', reject);
  });
}

let h: Harness;
let h2: Harness;
let base: string;
let base2: string;
const open: Client[] = [];
const track = async (c: Promise<Client>) => {
  const client = await c;
  open.push(client);
  return client;
};

beforeAll(async () => {
  h = await Harness.create();
  h2 = await Harness.create({}, h.url); // a second API process on the same database
  base = await h.listen();
  base2 = await h2.listen();
});
afterAll(async () => {
  for (const c of open) c.socket.terminate();
  await h2?.close();
  await h?.close();
});

/** How many notifications each process's hub has heard: taken before the changes that `settled` waits for. */
const heard = () => [h, h2].map((p) => p.realtime?.hub.heard ?? 0);

/**
 * Waits until both processes heard `changes` notifications more than at `mark` (one per statement that changed rows
 * of a table), then until they delivered every batch notified so far.
 */
async function settled(mark: number[], changes: number): Promise<void> {
  await eventually(async () => heard().every((n, i) => n >= (mark[i] ?? 0) + changes), 20_000);
  await Promise.all([h.realtime?.hub.settled(), h2.realtime?.hub.settled()]);
}

describe('GET /ws', () => {
  it('two members with different select policies each see exactly the rows they may select, on either process', async () => {
    const owner = await h.user('owner');
    const alice = await h.user('alice');
    const bob = await h.user('bob');
    const carol = await h.user('carol'); // a member without any select policy
    const ws = await h.workspace(owner.token, 'live');
    for (const u of [alice, bob, carol]) await h.addMember(owner.token, ws.id, u.email);
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE orders (name text, owner uuid, region text, secret text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['orders']);
    const ga = await h.group(owner.token, ws.id, { name: 'alice', user_ids: [alice.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: ga, table_name: 'orders', operation: 'select', condition: { owner: { $eq: '$user_id' } } });
    const gb = await h.group(owner.token, ws.id, { name: 'bob', user_ids: [bob.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: gb, table_name: 'orders', operation: 'select', condition: { region: { $eq: 'eu' } } });
    await h.policy(owner.token, ws.id, { policy_group_id: gb, table_name: 'orders', operation: 'select', mode: 'deny', name: 'd', condition: { secret: { $eq: 'yes' } } });

    const a = await track(connect(base, { token: alice.token, workspace: ws.id }));
    expect(a.messages[0]).toEqual({ type: 'connected', data: { workspace_id: ws.id, user_id: alice.id, tables: null } });
    // Bob and Carol on the other process; Bob with the browser form (token and workspace in the query).
    const b = await track(connect(base2, { query: { token: bob.token, workspace_id: ws.id } }));
    const c = await track(connect(base2, { token: carol.token, workspace: ws.id }));

    const inserted = heard();
    await h.sqlOk(
      owner.token,
      ws.id,
      `INSERT INTO orders (name, owner, region, secret) VALUES
         ('a-us', '${alice.id}', 'us', 'no'), ('a-eu', '${alice.id}', 'eu', 'no'), ('x-eu', '${owner.id}', 'eu', 'no'), ('x-eu-secret', '${owner.id}', 'eu', 'yes'), ('x-us', '${owner.id}', 'us', 'no')`,
    );
    await settled(inserted, 1);
    expect(a.rows()).toEqual(['RowInserted:orders:a-us', 'RowInserted:orders:a-eu']);
    expect(b.rows()).toEqual(['RowInserted:orders:a-eu', 'RowInserted:orders:x-eu']);
    expect(c.rows()).toEqual([]);
    // The row as their own read shows it: every column, the same values.
    const read = await h.sqlOk(alice.token, ws.id, "SELECT * FROM orders WHERE name = 'a-us'");
    expect(a.messages.find((m) => m.type === 'RowInserted')?.data.row).toEqual(read.rows[0]);

    // An update moving a row out of Bob's view is a RowDeleted for him, an update for Alice; a delete reaches those who saw it.
    const aEu = (await h.sqlOk(owner.token, ws.id, "SELECT id FROM orders WHERE name = 'a-eu'")).rows[0].id;
    const xEu = (await h.sqlOk(owner.token, ws.id, "SELECT id FROM orders WHERE name = 'x-eu'")).rows[0].id;
    const changed = heard();
    await h.sqlOk(owner.token, ws.id, "UPDATE orders SET region = 'us' WHERE name = 'a-eu'");
    await h.sqlOk(owner.token, ws.id, "DELETE FROM orders WHERE name IN ('x-eu', 'x-us', 'x-eu-secret')");
    await settled(changed, 2);
    expect(a.rows().slice(2)).toEqual(['RowUpdated:orders:a-eu']);
    expect(b.rows().slice(2)).toEqual([`RowDeleted:orders:${aEu}`, `RowDeleted:orders:${xEu}`]);
    expect(c.rows()).toEqual([]);
    // Nothing anyone could not select went out, in any message.
    const all = JSON.stringify([...b.messages, ...c.messages]);
    expect(all).not.toContain('a-us');
    expect(all).not.toContain('x-eu-secret');
    expect(all).not.toContain('x-us');
    // Each connection is audited.
    const audit = await h.call('GET', '/api/v1/audit-logs?action=subscribe_realtime', { token: owner.token, workspace: ws.id });
    expect(audit.status).toBe(200);
    expect(audit.body.map((e: { user_id: string }) => e.user_id).sort()).toEqual([alice.id, bob.id, carol.id].sort());
  });

  it("another workspace's changes never reach a subscriber, whatever the table is called", async () => {
    const owner = await h.user('owner');
    const mine = await h.workspace(owner.token, 'mine');
    const theirs = await h.workspace(owner.token, 'theirs');
    for (const w of [mine, theirs]) {
      await h.sqlOk(owner.token, w.id, 'CREATE TABLE orders (name text)');
      await h.allowAll(owner.token, w.id, [owner.id], ['orders']);
    }
    const c = await track(connect(base2, { token: owner.token, workspace: mine.id }));
    const mark = heard();
    await h.sqlOk(owner.token, theirs.id, "INSERT INTO orders (name) VALUES ('theirs')");
    await h.sqlOk(owner.token, mine.id, "INSERT INTO orders (name) VALUES ('mine')");
    await settled(mark, 2);
    expect(c.rows()).toEqual(['RowInserted:orders:mine']);
  });

  it('subscribes to chosen tables, answers ping, and refuses unknown messages', async () => {
    const owner = await h.user('owner');
    const w = await h.workspace(owner.token, 'tables');
    for (const t of ['orders', 'notes']) await h.sqlOk(owner.token, w.id, `CREATE TABLE ${t} (name text)`);
    await h.allowAll(owner.token, w.id, [owner.id], ['orders', 'notes']);
    const c = await track(connect(base, { token: owner.token, workspace: w.id, query: { tables: 'notes' } }));
    expect(c.messages[0]?.data.tables).toEqual(['notes']);
    const first = heard();
    await h.sqlOk(owner.token, w.id, "INSERT INTO orders (name) VALUES ('o1')");
    await h.sqlOk(owner.token, w.id, "INSERT INTO notes (name) VALUES ('n1')");
    await settled(first, 2);
    expect(c.rows()).toEqual(['RowInserted:notes:n1']);
    c.socket.send(JSON.stringify({ type: 'subscribe', tables: ['orders'] }));
    c.socket.send(JSON.stringify({ type: 'ping' }));
    c.socket.send('not json');
    await until(async () => (c.messages.some((m) => m.type === 'error') ? true : undefined), 5000);
    expect(c.messages.slice(-3).map((m) => m.type)).toEqual(['subscribed', 'pong', 'error']);
    const second = heard();
    await h.sqlOk(owner.token, w.id, "INSERT INTO orders (name) VALUES ('o2')");
    await h.sqlOk(owner.token, w.id, "INSERT INTO notes (name) VALUES ('n2')");
    await settled(second, 2);
    expect(c.rows()).toEqual(['RowInserted:notes:n1', 'RowInserted:orders:o2']);
  });

  it('refuses a missing or bad credential, a non-member, bad parameters, and a request without the upgrade', async () => {
    const owner = await h.user('owner');
    const stranger = await h.user('stranger');
    const w = await h.workspace(owner.token, 'refusals');
    await expect(connect(base, { workspace: w.id })).rejects.toMatchObject({ status: 401, body: { code: 'UNAUTHORIZED' } });
    await expect(connect(base, { token: 'nope', workspace: w.id })).rejects.toMatchObject({ status: 401, body: { code: 'UNAUTHORIZED' } });
    await expect(connect(base, { token: owner.token })).rejects.toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    await expect(connect(base, { token: stranger.token, workspace: w.id })).rejects.toMatchObject({ status: expect.any(Number) });
    const refused = await connect(base, { token: stranger.token, workspace: w.id }).catch((e) => e);
    expect([403, 404]).toContain(refused.status);
    await expect(connect(base, { token: owner.token, workspace: w.id, query: { tables: 'Bad Name' } })).rejects.toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR' },
    });
    const plain = await fetch(`${base}/ws`, { headers: { authorization: `Bearer ${owner.token}`, 'x-workspace-id': w.id } });
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { code: string }).code).toBe('BAD_REQUEST');
  });

  it('a row too long to send goes by reference (its id), only to those who may select it', async () => {
    const owner = await h.user('owner');
    const other = await h.user('other');
    const w = await h.workspace(owner.token, 'long rows');
    await h.addMember(owner.token, w.id, other.email);
    await h.sqlOk(owner.token, w.id, 'CREATE TABLE docs (name text, owner uuid, body text)');
    await h.allowAll(owner.token, w.id, [owner.id], ['docs']);
    const g = await h.group(owner.token, w.id, { name: 'own', user_ids: [other.id] });
    await h.policy(owner.token, w.id, { policy_group_id: g, table_name: 'docs', operation: 'select', condition: { owner: { $eq: '$user_id' } } });
    const mine = await track(connect(base, { token: owner.token, workspace: w.id }));
    const theirs = await track(connect(base2, { token: other.token, workspace: w.id }));
    const big = 'y'.repeat(300_000);
    const mark = heard();
    await h.sqlOk(owner.token, w.id, `INSERT INTO docs (name, owner, body) VALUES ('long', '${owner.id}', '${big}'), ('short', '${other.id}', 'b')`);
    await settled(mark, 1);
    const id = (await h.sqlOk(owner.token, w.id, "SELECT id FROM docs WHERE name = 'long'")).rows[0].id;
    const events = (c: Client) => c.messages.filter((m) => m.type === 'RowInserted').map((m) => m.data);
    expect(events(mine)).toEqual([
      { table_name: 'docs', row: { id }, truncated: true },
      { table_name: 'docs', row: expect.objectContaining({ name: 'short', body: 'b' }) },
    ]);
    // The long row is the owner's: the other member gets only the short one, not even the reference.
    expect(events(theirs)).toEqual([{ table_name: 'docs', row: expect.objectContaining({ name: 'short' }) }]);
  });

  it('a malformed upgrade is answered and closed; other upgrades are served as plain requests; a user has a connection cap', async () => {
    const { connect: tcp } = await import('node:net');
    const port = Number(new URL(base).port);
    const raw = (request: string) =>
      new Promise<string>((resolve) => {
        const socket = tcp(port, '127.0.0.1', () => socket.write(request));
        let got = '';
        socket.on('data', (d) => (got += d.toString()));
        socket.on('close', () => resolve(got));
        setTimeout(() => socket.destroy(), 5000).unref();
      });
    const malformed = await raw('GET // HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    expect(malformed).toMatch(/^HTTP\/1\.1 (400|404)/);
    // curl --http2 over http asks for h2c: the route still answers, over HTTP/1.1.
    const h2c = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n');
    expect(h2c).toMatch(/^HTTP\/1\.1 200/);

    const owner = await h.user('owner');
    const w = await h.workspace(owner.token, 'cap');
    const capped = await Harness.create({ REALTIME_MAX_CONNECTIONS_PER_USER: '2' }, h.url);
    try {
      const capBase = await capped.listen();
      const first = await connect(capBase, { token: owner.token, workspace: w.id });
      const second = await connect(capBase, { token: owner.token, workspace: w.id });
      await expect(connect(capBase, { token: owner.token, workspace: w.id })).rejects.toMatchObject({ status: 429, body: { code: 'TOO_MANY_REQUESTS' } });
      first.socket.close();
      await first.closed;
      const third = await connect(capBase, { token: owner.token, workspace: w.id });
      for (const c of [second, third]) c.socket.terminate();
    } finally {
      await capped.close();
    }
  });

  it('a member who is removed is disconnected at the next change', async () => {
    const owner = await h.user('owner');
    const member = await h.user('member');
    const w = await h.workspace(owner.token, 'removal');
    const m = await h.addMember(owner.token, w.id, member.email);
    await h.sqlOk(owner.token, w.id, 'CREATE TABLE orders (name text)');
    await h.allowAll(owner.token, w.id, [owner.id, member.id], ['orders']);
    const c = await track(connect(base2, { token: member.token, workspace: w.id }));
    const mark = heard();
    await h.sqlOk(owner.token, w.id, "INSERT INTO orders (name) VALUES ('before')");
    await settled(mark, 1);
    expect(c.rows()).toEqual(['RowInserted:orders:before']);
    const removed = await h.call('DELETE', `/api/v1/workspaces/${w.id}/members/${m.id}`, { token: owner.token });
    expect(removed.status).toBeLessThan(300);
    await h.sqlOk(owner.token, w.id, "INSERT INTO orders (name) VALUES ('after')");
    expect((await c.closed).code).toBe(4403);
    expect(c.rows()).toEqual(['RowInserted:orders:before']);
  });
});

describe('a slow consumer', () => {
  let slow: Harness;
  let slowBase: string;
  beforeAll(async () => {
    slow = await Harness.create({ REALTIME_MAX_BUFFER_BYTES: '16384' }, h.url);
    slowBase = await slow.listen();
  });
  afterAll(async () => slow?.close());

  it('is closed once its unsent messages pass REALTIME_MAX_BUFFER_BYTES; others go on', async () => {
    const owner = await h.user('owner');
    const w = await h.workspace(owner.token, 'slow');
    await h.sqlOk(owner.token, w.id, 'CREATE TABLE blobs (name text, body text)');
    await h.allowAll(owner.token, w.id, [owner.id], ['blobs']);
    const reader = await track(connect(slowBase, { token: owner.token, workspace: w.id }));
    const stalled = await track(connect(slowBase, { token: owner.token, workspace: w.id }));
    // The stalled client stops reading: the kernel's buffers fill, then the server's.
    (stalled.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const big = 'x'.repeat(100_000);
    for (let i = 0; i < 40; i++) {
      await h.sqlOk(owner.token, w.id, `INSERT INTO blobs (name, body) SELECT 'b${i}-' || g, '${big}' FROM generate_series(1, 10) g`);
    }
    await until(async () => (slow.realtime?.hub.size === 1 ? true : undefined), 30_000);
    // The reader got everything (still arriving over loopback while the server has sent it all).
    await until(async () => (reader.rows().length === 400 ? true : undefined), 30_000);
    (stalled.socket as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await stalled.closed;
    expect([1013, 1006]).toContain(closed.code);
  });
});
