import '@wds/testkit';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { WorkspaceSql } from '@wds/workspace-sql';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLOSE, RealtimeHub, type RealtimeSubscriber, type ServerMessage } from '../src/index.js';

let pool: pg.Pool;
let url: string;
let sql: WorkspaceSql;
let destroy: () => Promise<void>;
const user = newId();
const limits = { statementTimeoutMs: 5000, maxRows: 100 };
const hubs: RealtimeHub[] = [];

beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'realtime' });
  const { db, pool: p } = createDb(url, { max: 6 });
  await migrateToLatest(db);
  await db.insertInto('platform.users').values({ id: user, email: `${user}@x.io`, name: 'u' }).execute();
  pool = p;
  sql = new WorkspaceSql(pool, { databaseUrl: url });
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

function subscriber(ws: string): RealtimeSubscriber & { got: ServerMessage[]; closedWith: number | undefined; remove?: () => void } {
  const s = {
    workspaceId: ws,
    userId: user,
    tables: null,
    got: [] as ServerMessage[],
    closedWith: undefined as number | undefined,
    remove: undefined as (() => void) | undefined,
    allowed: async () => true,
    send(text: string) {
      s.got.push(JSON.parse(text) as ServerMessage);
    },
    close(code: number) {
      s.closedWith = code;
      s.remove?.();
    },
  };
  return s;
}

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

const settle = async (hub: RealtimeHub) => {
  await new Promise((r) => setTimeout(r, 150)); // the notifications arrive
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
    await new Promise((r) => setTimeout(r, 150));
    expect(s1.closedWith).toBe(CLOSE.tooSlow);
    g.open();
    await settle(g.hub);
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
    await new Promise((r) => setTimeout(r, 150));
    g.open();
    await settle(g.hub);
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
    await new Promise((r) => setTimeout(r, 150));
    g.open();
    await settle(g.hub);
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
});
