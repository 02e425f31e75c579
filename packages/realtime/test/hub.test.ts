import '@wds/testkit';
import { createHash } from 'node:crypto';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { WorkspaceSql } from '@wds/workspace-sql';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLOSE, ROW_CHANGES_CHANNEL, RealtimeHub, type RealtimeSubscriber, type ServerMessage, batchMac } from '../src/index.js';

let pool: pg.Pool;
let url: string;
let sql: WorkspaceSql;
let destroy: () => Promise<void>;
const user = newId();
const limits = { statementTimeoutMs: 5000, maxRows: 100 };
const hubs: RealtimeHub[] = [];
/** What row capture signs its notifications with (migration 0017_row_capture_hardening). */
let key: string;

beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'realtime' });
  const { db, pool: p } = createDb(url, { max: 6 });
  await migrateToLatest(db);
  await db.insertInto('platform.users').values({ id: user, email: `${user}@x.io`, name: 'u' }).execute();
  pool = p;
  sql = new WorkspaceSql(pool, { databaseUrl: url });
  key = (await pool.query<{ key: string }>('SELECT key FROM platform.row_capture_key')).rows[0]?.key as string;
  destroy = () => db.destroy();
});
afterAll(async () => {
  await Promise.all(hubs.map((h) => h.stop()));
  await sql.close();
  await destroy();
});

/** A workspace with table `t` that `user` may read and write. */
async function workspace(): Promise<string> {
  const ws = newId();
  await pool.query('INSERT INTO platform.workspaces (id, name) VALUES ($1, $2)', [ws, 'w']);
  const caller = { workspaceId: ws, ddlGroupId: null, isAdmin: true, subject: { kind: 'user' as const, userId: user } };
  await sql.execute(caller, 'CREATE TABLE t (v int)', limits);
  const group = newId();
  await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, ws, 'g', [user]]);
  for (const op of ['select', 'insert']) {
    await pool.query(
      "INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation) VALUES ($1, $2, $3, $4, 'allow', 't', $5)",
      [newId(), ws, group, op, op],
    );
  }
  return ws;
}
const insert = (ws: string, v: number) =>
  sql.execute({ workspaceId: ws, ddlGroupId: null, isAdmin: false, subject: { kind: 'user', userId: user } }, `INSERT INTO t (v) VALUES (${v})`, limits);

const asUser = (ws: string) => ({ workspaceId: ws, ddlGroupId: null, isAdmin: false, subject: { kind: 'user' as const, userId: user } });

function subscriber(
  ws: string,
  opts: { userId?: string; allowed?: () => Promise<boolean> } = {},
): RealtimeSubscriber & { got: ServerMessage[]; closedWith: number | undefined; reason: string | undefined; remove?: () => void } {
  const s = {
    workspaceId: ws,
    userId: opts.userId ?? user,
    tables: null,
    got: [] as ServerMessage[],
    closedWith: undefined as number | undefined,
    reason: undefined as string | undefined,
    remove: undefined as (() => void) | undefined,
    allowed: opts.allowed ?? (async () => true),
    send(text: string) {
      s.got.push(JSON.parse(text) as ServerMessage);
    },
    close(code: number, reason: string) {
      s.closedWith = code;
      s.reason = reason;
      s.remove?.();
    },
  };
  return s;
}

/** A started hub (stopped after the file). */
async function startedHub(opts: Partial<ConstructorParameters<typeof RealtimeHub>[0]> = {}): Promise<RealtimeHub> {
  const hub = new RealtimeHub({ databaseUrl: url, db: pool, sql, ...opts });
  hubs.push(hub);
  await hub.start();
  return hub;
}

/** A notification on the capture's channel, as any session may send one. */
const notify = (payload: string) => pool.query('SELECT pg_notify($1, $2)', [ROW_CHANGES_CHANNEL, payload]);
/** The notification row capture sends for a batch. */
const now = () => String(Math.floor(Date.now() / 1000));
const signed = (ws: string, batch: string, at = now()) => `${ws}:${batch}:${at}:${batchMac(key, ws, batch, at)}`;
const lastBatch = async (ws: string) =>
  (await pool.query<{ b: string }>('SELECT max(batch)::text AS b FROM platform.row_changes WHERE workspace_id = $1', [ws])).rows[0]?.b as string;
const values = (got: ServerMessage[]) => got.map((m) => (m as unknown as { data: { row: { v: number } } }).data.row.v);

/** A hub whose policy checks wait for `open()` (the real ones, held back). */
async function gatedHub(opts: { maxPendingBatches?: number; concurrency?: number; chunkRows?: number } = {}) {
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  const order: string[] = [];
  const hub = new RealtimeHub({
    databaseUrl: url,
    db: pool,
    ...opts,
    sql: {
      visibleRows: async (caller, table, images) => {
        await gate;
        order.push(caller.workspaceId);
        return sql.visibleRows(caller, table, images);
      },
    },
  });
  hubs.push(hub);
  await hub.start();
  return {
    hub,
    order,
    open: () => release(),
    close: () => {
      gate = new Promise<void>((r) => (release = r));
    },
  };
}

/** Waits until `hub` has heard `n` notifications in all (one per statement that captured rows, one per `notify`). */
const heard = (hub: RealtimeHub, n: number) => expect.poll(() => hub.heard).toBe(n);
/** Waits until `hub` has heard `n` notifications in all, then until it has delivered every batch among them. */
const settle = async (hub: RealtimeHub, n: number) => {
  await heard(hub, n);
  await hub.settled();
};

describe('RealtimeHub', () => {
  it("a workspace whose backlog passes maxPendingBatches has its subscribers closed (1013); other workspaces go on", async () => {
    const g = await gatedHub({ maxPendingBatches: 3 });
    const busy = await workspace();
    const calm = await workspace();
    const s1 = subscriber(busy);
    s1.remove = g.hub.add(s1);
    const s2 = subscriber(calm);
    s2.remove = g.hub.add(s2);
    for (let i = 0; i < 6; i++) await insert(busy, i); // one in delivery, then 3 waiting, then the overflow
    await insert(calm, 100);
    await heard(g.hub, 7); // the overflow was heard
    expect(s1.closedWith).toBe(CLOSE.tooSlow);
    g.open();
    await settle(g.hub, 7);
    expect(s2.got).toEqual([{ type: 'RowInserted', data: { table_name: 't', row: expect.objectContaining({ v: 100 }) } }]);
    expect(g.hub.size).toBe(1);
  });

  it('a busy workspace yields its delivery slot after 20 batches: another one is not starved', async () => {
    const g = await gatedHub({ concurrency: 1 });
    const busy = await workspace();
    const other = await workspace();
    const s1 = subscriber(busy);
    s1.remove = g.hub.add(s1);
    const s2 = subscriber(other);
    s2.remove = g.hub.add(s2);
    for (let i = 0; i < 45; i++) await insert(busy, i);
    await insert(other, 1000);
    await heard(g.hub, 46);
    g.open();
    await settle(g.hub, 46);
    expect(s1.got).toHaveLength(45);
    // In batch order for the busy workspace, and the other one's batch right after its first turn.
    expect(s1.got.map((m) => (m as unknown as { data: { row: { v: number } } }).data.row.v)).toEqual([...Array(45).keys()]);
    expect(g.order.indexOf(other)).toBe(20);
  });

  it('one statement of many rows is delivered in chunks, in order, and yields its slot between turns', async () => {
    const g = await gatedHub({ concurrency: 1, chunkRows: 1 });
    const big = await workspace();
    const other = await workspace();
    const s1 = subscriber(big);
    s1.remove = g.hub.add(s1);
    const s2 = subscriber(other);
    s2.remove = g.hub.add(s2);
    const caller = { workspaceId: big, ddlGroupId: null, isAdmin: false, subject: { kind: 'user' as const, userId: user } };
    await sql.execute(caller, 'INSERT INTO t (v) SELECT g FROM generate_series(1, 25) g', limits);
    await insert(other, 1000);
    await heard(g.hub, 2);
    g.open();
    await settle(g.hub, 2);
    expect(s1.got.map((m) => (m as unknown as { data: { row: { v: number } } }).data.row.v)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(s2.got).toHaveLength(1);
    expect(g.order.indexOf(other)).toBe(20);
  });

  it('losing the LISTEN connection closes every subscriber (1012): they must read again; it reconnects', async () => {
    const hub = new RealtimeHub({ databaseUrl: url, db: pool, sql });
    hubs.push(hub);
    await hub.start();
    const ws = await workspace();
    const s = subscriber(ws);
    s.remove = hub.add(s);
    await pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'wds-realtime'");
    await expect.poll(() => s.closedWith, { timeout: 10_000 }).toBe(CLOSE.interrupted);
    await expect.poll(() => hub.healthy, { timeout: 10_000 }).toBe(true);
    const again = subscriber(ws);
    again.remove = hub.add(again);
    await insert(ws, 7);
    await expect.poll(() => again.got.length, { timeout: 10_000 }).toBe(1);
  });
  it('without the row capture key the hub is not healthy (subscribers are refused) and says why', async () => {
    const logged: string[] = [];
    const noKey = { query: () => Promise.reject(new Error('relation "platform.row_capture_key" does not exist')) } as unknown as pg.Pool;
    const hub = await startedHub({ db: noKey, log: (msg) => logged.push(msg) });
    expect(hub.healthy).toBe(false);
    expect(logged.join('\n')).toMatch(/row capture key/);
  });

  it('a notification without the capture\'s MAC delivers nothing; a genuine one replayed is not delivered again, nor when stale', async () => {
    const hub = await startedHub();
    const ws = await workspace();
    const elsewhere = await workspace();
    await insert(ws, 1);
    await settle(hub, 1); // nobody subscribed yet: the genuine notification went by
    const batch = await lastBatch(ws);
    const at = now();
    const mac = batchMac(key, ws, batch, at);
    const s = subscriber(ws);
    s.remove = hub.add(s);
    const forged = [
      `${ws}:${batch}`, // the unsigned form
      `${ws}:${batch}:${at}`,
      `${ws}:${batch}:${at}:`,
      `${ws}:${batch}:${at}:${'0'.repeat(32)}`,
      `${ws}:${batch}:${at}:${batchMac('another key', ws, batch, at)}`,
      `${ws}:${batch}:${at}:${batchMac(key, elsewhere, batch, at)}`, // another workspace's MAC
      `${ws}:${batch}:${String(Number(at) + 1)}:${mac}`, // another time
      `${ws}:${batch}:${at}:${mac.toUpperCase()}`,
      `${ws}:${batch}:${at}:${mac.slice(0, 31)}`,
      `${ws}:${batch}:${at}:${mac}0`,
      `${ws}:${batch}:${at}:${mac}:x`,
      `${ws}:0${batch}:${at}:${mac}`,
      `${ws}:${batch}:${at}:${createHash('sha256').update(`${key}:${ws}:${batch}:${at}`).digest('hex')}`, // the whole digest
    ];
    for (const payload of forged) await notify(payload);
    await settle(hub, 14);
    expect(s.got).toEqual([]);
    expect(s.closedWith).toBeUndefined();
    // The batch that went by before they subscribed, replayed (properly signed, fresh): not theirs to get now.
    await notify(signed(ws, batch));
    await settle(hub, 15);
    expect(s.got).toEqual([]);
    // A batch while subscribed arrives once, however often it is replayed.
    await insert(ws, 2);
    await settle(hub, 16);
    const second = await lastBatch(ws);
    await notify(signed(ws, second));
    await notify(signed(ws, second));
    await settle(hub, 18);
    expect(values(s.got)).toEqual([2]);
    // A hub that never saw it (another process): a replay with the time it was sent, minutes ago, is refused; the
    // same batch signed as sent now is taken (it is one of the capture's: only it has the key).
    const other = await startedHub();
    const t = subscriber(ws);
    t.remove = other.add(t);
    await notify(signed(ws, second, String(Number(now()) - 300)));
    await settle(other, 1);
    expect(t.got).toEqual([]);
    await notify(signed(ws, second));
    await settle(other, 2);
    expect(values(t.got)).toEqual([2]);
  });

  it("one recipient's failing policy check closes only their subscriptions (1012); the others get the batch", async () => {
    const other = newId();
    const hub = await startedHub({
      sql: {
        // Their policy does not evaluate on the captured row (comparing an int column with 'abc', say).
        visibleRows: async (caller, table, images) => {
          if (caller.subject.userId === other) throw new Error('invalid input syntax for type integer: "abc"');
          return sql.visibleRows(caller, table, images);
        },
      },
    });
    const ws = await workspace();
    // Added first: without the isolation, their failure would end the batch's delivery before the others.
    const broken = subscriber(ws, { userId: other });
    broken.remove = hub.add(broken);
    const unsure = subscriber(ws, {
      allowed: async () => {
        throw new Error('the membership cache is unavailable');
      },
    });
    unsure.remove = hub.add(unsure);
    const fine = subscriber(ws);
    fine.remove = hub.add(fine);
    await insert(ws, 5);
    await settle(hub, 1);
    expect([broken.closedWith, broken.reason]).toEqual([CLOSE.interrupted, 'could not check a change against your policies; reconnect and read again']);
    expect(unsure.closedWith).toBe(CLOSE.interrupted);
    expect(fine.closedWith).toBeUndefined();
    expect(values(fine.got)).toEqual([5]);
    await insert(ws, 6);
    await settle(hub, 2);
    expect(values(fine.got)).toEqual([5, 6]);
    expect(broken.got).toEqual([]);
    expect(unsure.got).toEqual([]);
  });

  it('all subscribed users are checked in one query a run; when it fails, one by one, and only whose policy fails misses the change', async () => {
    const calls = { one: 0, many: 0 };
    const hub = await startedHub({
      sql: {
        visibleRows: async (...args) => {
          calls.one++;
          return sql.visibleRows(...args);
        },
        visibleRowsFor: async (...args) => {
          calls.many++;
          return sql.visibleRowsFor(...args);
        },
      },
    });
    const ws = await workspace();
    const [above, all, none] = [newId(), newId(), newId()];
    const policy = async (userId: string, condition: object) => {
      const group = newId();
      await pool.query('INSERT INTO platform.policy_groups (id, workspace_id, name, user_ids) VALUES ($1, $2, $3, $4)', [group, ws, `g-${userId}`, [userId]]);
      await pool.query(
        "INSERT INTO platform.policies (id, workspace_id, policy_group_id, name, mode, table_name, operation, condition) VALUES ($1, $2, $3, 'p', 'allow', 't', 'select', $4)",
        [newId(), ws, group, JSON.stringify(condition)],
      );
    };
    await policy(above, { v: { $gt: 2 } });
    await policy(all, {});
    const subs = [user, above, all, none].map((userId) => {
      const s = subscriber(ws, { userId });
      s.remove = hub.add(s);
      return s;
    });
    const [mine, aboveSub, allSub, noneSub] = subs as [ReturnType<typeof subscriber>, ReturnType<typeof subscriber>, ReturnType<typeof subscriber>, ReturnType<typeof subscriber>];
    await insert(ws, 1);
    await insert(ws, 5);
    await settle(hub, 2);
    expect([values(mine.got), values(aboveSub.got), values(allSub.got), values(noneSub.got)]).toEqual([[1, 5], [5], [1, 5], []]);
    expect(calls).toEqual({ one: 0, many: 2 });
    // A member whose policy cannot be evaluated over the rows ('abc' is no integer): the query of all fails, they are
    // found one by one, and only they miss the change.
    await policy(none, { v: { $gt: 'abc' } });
    await insert(ws, 7);
    await settle(hub, 3);
    expect([noneSub.closedWith, noneSub.reason]).toEqual([CLOSE.interrupted, 'could not check a change against your policies; reconnect and read again']);
    expect([values(mine.got), values(aboveSub.got), values(allSub.got)]).toEqual([[1, 5, 7], [5, 7], [1, 5, 7]]);
    expect(calls.many).toBe(3);
    expect(calls.one).toBe(4);
  });

  it("a workspace whose SQL connections stay busy gives up its delivery slot: its subscribers are closed (1012), others get theirs", async () => {
    const stuck = await workspace();
    const free = await workspace();
    // The stuck workspace's connections never come free: a check waits until the hub stops waiting (its signal).
    const never = (signal?: AbortSignal) => new Promise<never>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
    const hub = await startedHub({
      concurrency: 1, // one delivery slot: without giving it up, the stuck workspace would hold it for good
      checkWaitMs: 200,
      sql: {
        visibleRows: (caller, table, images, signal) => (caller.workspaceId === stuck ? never(signal) : sql.visibleRows(caller, table, images, signal)),
        visibleRowsFor: (ws, users, table, images, signal) => (ws === stuck ? never(signal) : sql.visibleRowsFor(ws, users, table, images, signal)),
      },
    });
    const a = subscriber(stuck);
    a.remove = hub.add(a);
    const b = subscriber(free);
    b.remove = hub.add(b);
    await insert(stuck, 1);
    await insert(free, 2);
    await settle(hub, 2);
    expect([a.closedWith, a.reason]).toEqual([CLOSE.interrupted, "the workspace's database connections were all busy; reconnect and read again"]);
    expect(values(b.got)).toEqual([2]);
    expect(b.closedWith).toBeUndefined();
  });

  it("a batch whose delivery fails as a whole closes the workspace's subscribers (1012)", async () => {
    // The outbox cannot be read (the service's connection broke, say); the key can.
    const failing = {
      query: (text: string, params?: unknown[]) => (text.includes('FROM platform.row_changes rc') ? Promise.reject(new Error('connection reset')) : pool.query(text, params)),
    } as unknown as pg.Pool;
    const hub = await startedHub({ db: failing, log: () => {} });
    const ws = await workspace();
    const s = subscriber(ws);
    s.remove = hub.add(s);
    await insert(ws, 1);
    await settle(hub, 1);
    expect(s.closedWith).toBe(CLOSE.interrupted);
    expect(hub.size).toBe(0);
  });

  it("a batch pruned before it was read closes the workspace's subscribers (1012): they missed it", async () => {
    const g = await gatedHub({ concurrency: 1 });
    const busy = await workspace();
    const late = await workspace();
    const s1 = subscriber(busy);
    s1.remove = g.hub.add(s1);
    const s2 = subscriber(late);
    s2.remove = g.hub.add(s2);
    await insert(busy, 1); // holds the only delivery slot
    await insert(late, 2);
    await heard(g.hub, 2);
    // The process lagged beyond ROW_CHANGE_RETENTION_MS: the late workspace's batch is gone before it is read.
    await pool.query('DELETE FROM platform.row_changes WHERE workspace_id = $1', [late]);
    g.open();
    await settle(g.hub, 2);
    expect(values(s1.got)).toEqual([1]);
    expect(s2.got).toEqual([]);
    expect([s2.closedWith, s2.reason]).toEqual([CLOSE.interrupted, 'changes were missed; reconnect and read again']);
  });

  it('a turn counts policy checks: a batch of alternating operations yields its slot after 20 of them', async () => {
    const g = await gatedHub({ concurrency: 1 });
    const busy = await workspace();
    const other = await workspace();
    await sql.execute(asUser(busy), 'INSERT INTO t (v) SELECT g FROM generate_series(1, 40) g', limits);
    await heard(g.hub, 1); // nobody subscribed: it goes by
    const { rows: images } = await pool.query<{ row: string }>('SELECT row::text AS row FROM platform.row_changes WHERE workspace_id = $1 ORDER BY id', [busy]);
    // One statement's updates and soft deletes, alternating: one run of an operation (one policy check) per row.
    const batch = (await pool.query<{ b: string }>("SELECT nextval('platform.row_change_batches')::text AS b")).rows[0]?.b as string;
    for (const [i, { row }] of images.entries()) {
      await pool.query("INSERT INTO platform.row_changes (batch, workspace_id, table_name, op, row, old) VALUES ($1, $2, 't', $3, $4::jsonb, $5::jsonb)", [
        batch,
        busy,
        i % 2 === 0 ? 'update' : 'delete',
        i % 2 === 0 ? row : null,
        row,
      ]);
    }
    const s1 = subscriber(busy);
    s1.remove = g.hub.add(s1);
    const s2 = subscriber(other);
    s2.remove = g.hub.add(s2);
    await notify(signed(busy, batch));
    await insert(other, 1000);
    await heard(g.hub, 3);
    g.open();
    await settle(g.hub, 3);
    expect(s1.got.map((m) => m.type)).toEqual(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 'RowUpdated' : 'RowDeleted')));
    expect(s1.got.filter((m) => m.type === 'RowUpdated').map((m) => (m as unknown as { data: { row: { v: number } } }).data.row.v)).toEqual(
      Array.from({ length: 20 }, (_, i) => 2 * i + 1),
    );
    expect(values(s2.got)).toEqual([1000]);
    expect(g.order.indexOf(other)).toBe(20);
  });
});
