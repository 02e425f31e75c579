// Realtime latency (issue 19): a row written through the SQL endpoint, until the WebSocket message reaches the one
// subscriber whose select policy admits it, with 1, 10 and 50 subscribers (each a user of their own, each allowed
// only their own rows: every write is checked against every subscriber's policy, and reaches one). Baselines in the
// same run: the write's own HTTP round trip, and a ping/pong on the same WebSocket. Also checks that no subscriber
// received a row that is not theirs. Run with Node's WebSocket (`node --experimental-websocket` on Node 20).
import { createDatabase, startTestPostgres } from '@wds/testkit';
import { admin, startApiWithUser } from './bootstrap.mjs';

const WRITES = Number(process.env.BENCH_WRITES ?? 200);
const SUBSCRIBERS = [1, 10, 50];
if (typeof WebSocket === 'undefined') throw new Error('no WebSocket: run with node --experimental-websocket (Node 20) or Node >= 22');

const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'bench_rt' });
const { running, call, user, auth, ws } = await startApiWithUser({ DATABASE_URL: url, REALTIME_MAX_CONNECTIONS_PER_USER: '100' });
const inWs = { ...auth, 'x-workspace-id': ws.id };
await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: 'CREATE TABLE orders (owner_id uuid, title text, n int)' }, auth);
const writers = await call('POST', '/api/v1/policy-groups', { name: 'writer', user_ids: [user.id] }, inWs);
await call('POST', '/api/v1/policies', { name: 'write', policy_group_id: writers.id, mode: 'allow', table_name: 'orders', operation: 'insert' }, inWs);

/** Members, each in one group that may select only their own rows. */
const readers = [];
for (let i = 0; i < Math.max(...SUBSCRIBERS); i++) {
  const u = await call('POST', '/admin/v1/users', { email: `reader${i}-${Date.now()}@example.com`, name: `Reader ${i}` }, admin);
  const { token: t } = await call('POST', `/admin/v1/users/${u.id}/sessions`, {}, admin);
  await call('POST', `/api/v1/workspaces/${ws.id}/members`, { email: u.email, role: 'member' }, auth);
  readers.push({ id: u.id, token: t });
}
const group = await call('POST', '/api/v1/policy-groups', { name: 'readers', user_ids: readers.map((r) => r.id) }, inWs);
await call('POST', '/api/v1/policies', { name: 'own', policy_group_id: group.id, mode: 'allow', table_name: 'orders', operation: 'select', condition: { owner_id: '$user_id' } }, inWs);

function open(reader) {
  const socket = new WebSocket(`${running.url.replace(/^http/, 'ws')}/ws?token=${encodeURIComponent(reader.token)}&workspace_id=${ws.id}&tables=orders`);
  const waiting = new Map();
  const sub = { socket, foreign: 0, waiting };
  return new Promise((ok, fail) => {
    socket.onerror = () => fail(new Error('WebSocket error'));
    socket.onmessage = (e) => {
      const m = JSON.parse(e.data);
      if (m.type === 'connected') return ok(sub);
      const key = m.type === 'pong' ? 'pong' : m.type === 'RowInserted' ? m.data.row.title : undefined;
      if (m.type === 'RowInserted' && m.data.row.owner_id !== reader.id) sub.foreign++;
      const done = key && waiting.get(key);
      if (done) {
        waiting.delete(key);
        done();
      }
    };
  });
}
const arrival = (sub, key) => new Promise((ok) => sub.waiting.set(key, ok));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p99 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)];
const ms = (from) => Number(process.hrtime.bigint() - from) / 1e6;

console.log(`Realtime: a policy-filtered row from INSERT to its subscriber, ${WRITES} writes a case, PostgreSQL ${server.kind}\n`);
console.log('subscribers  write p50/p99 ms  delivered p50/p99 ms  ping p50 ms  delivered/write  foreign rows');
let seq = 0;
for (const n of SUBSCRIBERS) {
  const subs = await Promise.all(readers.slice(0, n).map(open));
  const write = [];
  const delivered = [];
  const ping = [];
  for (let i = 0; i < WRITES; i++) {
    const k = i % n;
    const title = `w${seq++}`;
    const got = arrival(subs[k], title);
    const s = process.hrtime.bigint();
    await call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: `INSERT INTO orders (owner_id, title, n) VALUES ('${readers[k].id}', '${title}', ${i})` }, auth);
    write.push(ms(s));
    await got;
    delivered.push(ms(s));
    const p = process.hrtime.bigint();
    const pong = arrival(subs[k], 'pong');
    subs[k].socket.send('{"type":"ping"}');
    await pong;
    ping.push(ms(p));
  }
  // Let anything misdirected arrive before counting.
  await new Promise((r) => setTimeout(r, 500));
  const foreign = subs.reduce((a, s) => a + s.foreign, 0);
  console.log(
    String(n).padStart(11),
    `${median(write).toFixed(2)}/${p99(write).toFixed(2)}`.padStart(17),
    `${median(delivered).toFixed(2)}/${p99(delivered).toFixed(2)}`.padStart(21),
    median(ping).toFixed(2).padStart(12),
    `${(median(delivered) / median(write)).toFixed(2)}x`.padStart(16),
    String(foreign).padStart(13),
  );
  if (foreign > 0) throw new Error(`${foreign} rows reached a subscriber whose policy does not admit them`);
  for (const s of subs) s.socket.close();
}
await running.close();
await server.stop();
