import '@wds/testkit';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { ServiceError } from '@wds/errors';
import { createDatabase } from '@wds/testkit';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { type Lease, TenantPools, type TenantPoolsOptions } from '../src/tenant-pools.js';

// Each test's connections carry `application_name` = "<tag>:<workspace>", so pg_stat_activity shows exactly them.
let url: string;
let admin: pg.Client;
let n = 0;
const opened: TenantPools[] = [];

beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'tenant_pools' });
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((p) => p.close()));
});
afterAll(() => admin.end());

const connectAs = (tag: string) => async (ws: string) => {
  const client = new pg.Client({ connectionString: url, application_name: `${tag}:${ws}` });
  await client.connect();
  return client;
};

function pools(opts: Partial<TenantPoolsOptions> = {}): { pools: TenantPools; tag: string } {
  const tag = `tp${++n}_${process.pid}`;
  const p = new TenantPools({
    connect: connectAs(tag),
    maxPerWorkspace: 2,
    maxTotal: 10,
    maxQueuePerWorkspace: 10,
    acquireTimeoutMs: 60_000,
    idleTimeoutMs: 60_000,
    ...opts,
  });
  opened.push(p);
  return { pools: p, tag };
}

/** Server-side connections of one TenantPools, by workspace. */
async function backends(tag: string): Promise<Record<string, number>> {
  const { rows } = await admin.query(
    `SELECT split_part(application_name, ':', 2) AS ws, count(*)::int AS n FROM pg_stat_activity
      WHERE starts_with(application_name, $1) GROUP BY 1`,
    [`${tag}:`],
  );
  return Object.fromEntries(rows.map((r) => [r.ws, r.n]));
}

/** A promise whose outcome can be inspected without awaiting it. */
function track<T>(p: Promise<T>) {
  const t: { state: 'pending' | 'fulfilled' | 'rejected'; value?: T; error?: unknown; promise: Promise<T> } = {
    state: 'pending',
    promise: p,
  };
  p.then(
    (v) => Object.assign(t, { state: 'fulfilled', value: v }),
    (e) => Object.assign(t, { state: 'rejected', error: e }),
  );
  return t;
}

/** Resolves on the client's 'end' (unlike events.once, an 'error' first does not reject it). */
const ends = (client: pg.Client) => new Promise<void>((resolve) => client.once('end', () => resolve()));

const pid = async (lease: Lease): Promise<number> => (await lease.client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
const selectOne = async (lease: Lease) => (await lease.client.query('SELECT 1 AS one')).rows;

async function rejection(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

describe('per-workspace cap', () => {
  it("a third statement of A waits for A's slot while B runs on its own connection", async () => {
    const { pools: p, tag } = pools({ maxPerWorkspace: 2 });
    // A's long statements block on a lock the test holds, so they run exactly as long as the test says.
    await admin.query('SELECT pg_advisory_lock(7001)');
    const a1 = await p.acquire('A');
    const a2 = await p.acquire('A');
    const q1 = track(a1.client.query('SELECT pg_advisory_xact_lock_shared(7001)'));
    const q2 = track(a2.client.query('SELECT pg_advisory_xact_lock_shared(7001)'));
    const a3 = track(p.acquire('A'));
    expect(p.stats().workspaces.A).toEqual({ leased: 2, idle: 0, connecting: 0, waiting: 1 });
    await expect
      .poll(async () => (await admin.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [`${tag}:A`],
      )).rows[0].n)
      .toBe(2);

    // B is not behind A's queue: it connects and completes while A's statements still run and A still waits.
    const b = await p.acquire('B');
    expect(await selectOne(b)).toEqual([{ one: 1 }]);
    b.release();
    expect([q1.state, q2.state, a3.state]).toEqual(['pending', 'pending', 'pending']);
    expect(await backends(tag)).toEqual({ A: 2, B: 1 });

    await admin.query('SELECT pg_advisory_unlock(7001)');
    await Promise.all([q1.promise, q2.promise]);
    expect(a3.state).toBe('pending');
    a1.release();
    // The released connection goes straight to A's waiter: no new connection.
    const lease3 = await a3.promise;
    expect(lease3.client).toBe(a1.client);
    expect(await selectOne(lease3)).toEqual([{ one: 1 }]);
    expect(p.stats()).toMatchObject({ open: 3, leased: 2, idle: 1, waiting: 0 });
    lease3.release();
    a2.release();
  });

  it('refuses at once with 429 when the workspace queue is full', async () => {
    const { pools: p } = pools({ maxPerWorkspace: 1, maxQueuePerWorkspace: 2 });
    const a1 = await p.acquire('A');
    const w1 = track(p.acquire('A'));
    const w2 = track(p.acquire('A'));
    // Nothing was released: the refusal does not wait for anything.
    const err = await rejection(p.acquire('A'));
    expect(err.code).toBe('TOO_MANY_REQUESTS');
    expect(err.status).toBe(429);
    expect(err.details).toMatch(/SQL_WORKSPACE_QUEUE/);
    expect(err.details).toMatch(/SQL_WORKSPACE_CONNECTIONS/);
    expect(p.stats().workspaces.A).toMatchObject({ leased: 1, waiting: 2 });
    // Another workspace is unaffected.
    const b = await p.acquire('B');
    b.release();

    a1.release();
    const l1 = await w1.promise;
    expect(w2.state).toBe('pending');
    l1.release();
    (await w2.promise).release();
  });

  it('with a queue of 0, a busy workspace is refused and an idle one is served', async () => {
    const { pools: p } = pools({ maxPerWorkspace: 1, maxQueuePerWorkspace: 0 });
    const a1 = await p.acquire('A');
    expect((await rejection(p.acquire('A'))).code).toBe('TOO_MANY_REQUESTS');
    a1.release();
    const again = await p.acquire('A');
    expect(again.client).toBe(a1.client);
    again.release();
  });

  it('an acquire that waits too long is refused with 429 and leaves the queue', async () => {
    const { pools: p } = pools({ maxPerWorkspace: 1, acquireTimeoutMs: 100 });
    const a1 = await p.acquire('A');
    const err = await rejection(p.acquire('A'));
    expect(err.code).toBe('TOO_MANY_REQUESTS');
    expect(err.details).toMatch(/SQL_ACQUIRE_TIMEOUT_MS/);
    expect(p.stats().workspaces.A).toMatchObject({ leased: 1, waiting: 0 });
    a1.release();
    // Nobody is waiting any more: the connection is idle.
    expect(p.stats().workspaces.A).toMatchObject({ leased: 0, idle: 1 });
  });

  it('an acquire whose connection is too slow is refused; the late connection serves the next acquire', async () => {
    let arrive!: () => void;
    const gate = new Promise<void>((r) => {
      arrive = r;
    });
    const tag = `tp${++n}_${process.pid}`;
    const p = new TenantPools({
      connect: async (ws) => {
        await gate;
        return connectAs(tag)(ws);
      },
      maxPerWorkspace: 1,
      maxTotal: 1,
      maxQueuePerWorkspace: 10,
      acquireTimeoutMs: 100,
      idleTimeoutMs: 60_000,
    });
    opened.push(p);
    const err = await rejection(p.acquire('A'));
    expect(err.code).toBe('SERVICE_UNAVAILABLE');
    expect(err.details).toMatch(/SQL_ACQUIRE_TIMEOUT_MS/);
    expect(p.stats()).toMatchObject({ open: 1, connecting: 1 });
    const next = track(p.acquire('A'));
    arrive();
    const lease = await next.promise;
    expect(await selectOne(lease)).toEqual([{ one: 1 }]);
    expect(p.stats()).toMatchObject({ open: 1, leased: 1 });
    lease.release();
  });
});

describe('overall cap', () => {
  it('closes the least recently used idle connection of another workspace to make room', async () => {
    const tag = `tp${++n}_${process.pid}`;
    // Each time a connection is about to be opened: how many clients are still closing (an evicted one must be gone).
    const closing = new Set<pg.Client>();
    const seenAtConnect: number[] = [];
    const p = new TenantPools({
      connect: async (ws) => {
        seenAtConnect.push(closing.size);
        const client = await connectAs(tag)(ws);
        const end = client.end.bind(client);
        client.end = (() => {
          closing.add(client);
          client.once('end', () => closing.delete(client));
          return end();
        }) as typeof client.end;
        return client;
      },
      maxPerWorkspace: 2,
      maxTotal: 2,
      maxQueuePerWorkspace: 10,
      acquireTimeoutMs: 60_000,
      idleTimeoutMs: 60_000,
    });
    opened.push(p);
    const a = await p.acquire('A');
    const b = await p.acquire('B');
    a.release(); // A is now the least recently used
    b.release();
    expect(await backends(tag)).toEqual({ A: 1, B: 1 });

    const c = await p.acquire('C');
    expect(await selectOne(c)).toEqual([{ one: 1 }]);
    expect(p.stats()).toMatchObject({ open: 2, leased: 1, idle: 1 });
    expect(p.stats().workspaces).toEqual({
      B: { leased: 0, idle: 1, connecting: 0, waiting: 0 },
      C: { leased: 1, idle: 0, connecting: 0, waiting: 0 },
    });
    // The evicted connection was closed before the new one was opened.
    expect(await backends(tag)).toEqual({ B: 1, C: 1 });
    expect(seenAtConnect).toEqual([0, 0, 0]);
    c.release();
  });

  it('serves workspaces waiting on the overall cap in turns, not first come', async () => {
    const { pools: p, tag } = pools({ maxTotal: 2, maxPerWorkspace: 10 });
    const c1 = await p.acquire('C');
    const c2 = await p.acquire('C');
    const served: string[] = [];
    const named = (name: string, ws: string) => {
      const t = track(p.acquire(ws));
      t.promise.then(() => served.push(name));
      return t;
    };
    const as = [1, 2, 3, 4, 5].map((i) => named(`A${i}`, 'A'));
    const b1 = named('B1', 'B');
    expect(p.stats().workspaces).toMatchObject({ A: { waiting: 5 }, B: { waiting: 1 } });

    c1.release();
    const a1 = await as[0]!.promise;
    c2.release();
    const b = await b1.promise;
    expect(served).toEqual(['A1', 'B1']);
    expect(as.slice(1).map((t) => t.state)).toEqual(['pending', 'pending', 'pending', 'pending']);
    expect(await backends(tag)).toEqual({ A: 1, B: 1 });

    // The rest of A's queue drains through A's own connections and whatever B frees.
    a1.release();
    b.release();
    for (const t of as.slice(1)) {
      const lease = await t.promise;
      expect(p.stats().open).toBeLessThanOrEqual(2);
      lease.release();
    }
    // Within A, a released connection can reach a later waiter before an earlier one's new connection is open.
    expect(served.slice(0, 2)).toEqual(['A1', 'B1']);
    expect([...served].sort()).toEqual(['A1', 'A2', 'A3', 'A4', 'A5', 'B1']);
    expect(Object.values(await backends(tag)).reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(2);
  });

  it('a workspace holding every connection, with more waiting, cannot starve another', async () => {
    const { pools: p } = pools({ maxTotal: 2, maxPerWorkspace: 10 });
    const a1 = await p.acquire('A');
    const a2 = await p.acquire('A');
    const aWaiters = [track(p.acquire('A')), track(p.acquire('A')), track(p.acquire('A'))];
    const b1 = track(p.acquire('B'));

    // A's next release is B's turn: A's connection is closed and B connects.
    a1.release();
    const b = await b1.promise;
    expect(await selectOne(b)).toEqual([{ one: 1 }]);
    expect(aWaiters.map((t) => t.state)).toEqual(['pending', 'pending', 'pending']);
    expect(p.stats().workspaces).toMatchObject({ A: { leased: 1, waiting: 3 }, B: { leased: 1 } });

    b.release();
    a2.release();
    for (const t of aWaiters) (await t.promise).release();
    expect(p.stats().open).toBeLessThanOrEqual(2);
  });
  it('among workspaces holding as many connections, the one served longest ago goes first', async () => {
    const { pools: p } = pools({ maxTotal: 3, maxPerWorkspace: 10 });
    const b1 = await p.acquire('B');
    const a1 = await p.acquire('A');
    const c1 = await p.acquire('C');
    b1.release();
    const b2 = await p.acquire('B'); // B was served last
    const bWaiter = track(p.acquire('B'));
    const aWaiter = track(p.acquire('A'));
    c1.release();
    const a2 = await aWaiter.promise;
    expect(bWaiter.state).toBe('pending');
    a2.release();
    a1.release();
    b2.release();
    (await bWaiter.promise).release();
  });

  it('workspaces at their fair share keep reusing their own connections instead of trading them', async () => {
    const { pools: p } = pools({ maxTotal: 2, maxPerWorkspace: 10 });
    const a = await p.acquire('A');
    const b = await p.acquire('B');
    const aWaiters = [track(p.acquire('A')), track(p.acquire('A'))];
    const bWaiter = track(p.acquire('B'));
    // A returns its connection twice while B holds one and waits for more: A holds the fewest, so A goes on.
    a.release();
    const a2 = await aWaiters[0]!.promise;
    expect(a2.client).toBe(a.client);
    a2.release();
    const a3 = await aWaiters[1]!.promise;
    expect(a3.client).toBe(a.client);
    expect(bWaiter.state).toBe('pending');
    b.release();
    expect((await bWaiter.promise).client).toBe(b.client);
    a3.release();
    (await bWaiter.promise).release();
  });
});

describe('broken connections', () => {
  it('a leased connection killed mid-query rejects the query, does not crash, and is discarded', async () => {
    const { pools: p, tag } = pools();
    const lease = await p.acquire('A');
    const victim = await pid(lease);
    // Handled from the start: the rejection may arrive before pg_terminate_backend's own answer.
    const running = expect(lease.client.query('SELECT pg_sleep(30)')).rejects.toThrow(/terminat/);
    const ended = ends(lease.client);
    await expect
      .poll(async () => (await admin.query('SELECT state FROM pg_stat_activity WHERE pid = $1', [victim])).rows[0]?.state)
      .toBe('active');
    await admin.query('SELECT pg_terminate_backend($1)', [victim]);
    await running;
    // Released at once, before the socket's end arrives, and not marked broken by the caller:
    // the pool saw the FATAL error itself and does not keep the connection.
    lease.release();
    expect(p.stats()).toMatchObject({ open: 0, leased: 0, idle: 0 });
    await ended;

    const next = await p.acquire('A');
    expect(await pid(next)).not.toBe(victim);
    expect(await backends(tag)).toEqual({ A: 1 });
    next.release();
  });

  it('a connection whose query failed FATAL is not kept even when released before its socket closes', async () => {
    // A proxy that passes everything but holds back the server's end of the socket until told.
    let passFin!: () => void;
    const fin = new Promise<void>((r) => {
      passFin = r;
    });
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((down) => {
      const target = new URL(url);
      const up = net.connect(Number(target.port), target.hostname);
      for (const s of [down, up]) {
        sockets.add(s);
        s.on('error', () => {});
      }
      down.on('data', (d) => up.write(d));
      up.on('data', (d) => down.write(d));
      up.on('end', () => void fin.then(() => down.end()));
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const via = new URL(url);
    via.hostname = '127.0.0.1';
    via.port = String((proxy.address() as net.AddressInfo).port);
    try {
      const tag = `tp${++n}_${process.pid}`;
      const p = new TenantPools({
        connect: async (ws) => {
          const client = new pg.Client({ connectionString: via.toString(), application_name: `${tag}:${ws}` });
          await client.connect();
          return client;
        },
        maxPerWorkspace: 2,
        maxTotal: 10,
        maxQueuePerWorkspace: 10,
        acquireTimeoutMs: 60_000,
        idleTimeoutMs: 60_000,
      });
      opened.push(p);
      const lease = await p.acquire('A');
      const victim = await pid(lease);
      const running = expect(lease.client.query('SELECT pg_sleep(30)')).rejects.toThrow(/terminat/);
      await expect
        .poll(async () => (await admin.query('SELECT state FROM pg_stat_activity WHERE pid = $1', [victim])).rows[0]?.state)
        .toBe('active');
      await admin.query('SELECT pg_terminate_backend($1)', [victim]);
      await running;
      lease.release();
      expect(p.stats()).toMatchObject({ open: 0, idle: 0 });
      passFin();
      const next = await p.acquire('A');
      expect(await selectOne(next)).toEqual([{ one: 1 }]);
      next.release();
      await p.close();
    } finally {
      passFin();
      for (const s of sockets) s.destroy();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('a leased connection killed between queries emits no unhandled error and is discarded on release', async () => {
    const { pools: p } = pools();
    const lease = await p.acquire('A');
    const victim = await pid(lease);
    const ended = ends(lease.client);
    await admin.query('SELECT pg_terminate_backend($1)', [victim]);
    await ended;
    await expect(lease.client.query('SELECT 1')).rejects.toThrow();
    lease.release();
    expect(p.stats().open).toBe(0);
    const next = await p.acquire('A');
    expect(await selectOne(next)).toEqual([{ one: 1 }]);
    next.release();
  });

  it('an idle connection killed is dropped; the next acquire gets a working one', async () => {
    const { pools: p } = pools();
    const lease = await p.acquire('A');
    const victim = await pid(lease);
    lease.release();
    const ended = ends(lease.client);
    await admin.query('SELECT pg_terminate_backend($1)', [victim]);
    await ended;
    expect(p.stats()).toMatchObject({ open: 0, idle: 0 });
    const next = await p.acquire('A');
    expect(await pid(next)).not.toBe(victim);
    expect(await selectOne(next)).toEqual([{ one: 1 }]);
    next.release();
  });

  it('release(true) and a connection left in a transaction are closed, not reused', async () => {
    const { pools: p, tag } = pools();
    const l1 = await p.acquire('A');
    l1.release(true);
    const l2 = await p.acquire('A');
    expect(l2.client).not.toBe(l1.client);
    await l2.client.query('BEGIN');
    l2.release();
    expect(p.stats().open).toBe(0);
    const l3 = await p.acquire('A');
    expect(l3.client).not.toBe(l2.client);
    // The two closed ones go away (their close was not awaited).
    await expect.poll(() => backends(tag)).toEqual({ A: 1 });
    l3.release();
  });

  it('a failed connect rejects with SERVICE_UNAVAILABLE and frees its slot', async () => {
    const good = connectAs(`tp${++n}_${process.pid}`);
    const p = new TenantPools({
      connect: async (ws) => {
        if (ws === 'down') {
          const wrong = new URL(url);
          wrong.pathname = '/no_such_database';
          const c = new pg.Client({ connectionString: wrong.toString() });
          await c.connect();
          return c;
        }
        if (ws === 'denied') throw new ServiceError('FORBIDDEN', 'no role');
        return good(ws);
      },
      maxPerWorkspace: 1,
      maxTotal: 1,
      maxQueuePerWorkspace: 10,
      acquireTimeoutMs: 60_000,
      idleTimeoutMs: 60_000,
    });
    opened.push(p);
    const err = await rejection(p.acquire('down'));
    expect(err.code).toBe('SERVICE_UNAVAILABLE');
    expect(err.message).toBe('The database is not reachable');
    expect(err.details).toMatch(/3D000/);
    expect((await rejection(p.acquire('denied'))).code).toBe('FORBIDDEN');
    expect(p.stats()).toMatchObject({ open: 0, connecting: 0, waiting: 0 });
    // The only slot (maxTotal 1) is free again.
    const lease = await p.acquire('A');
    expect(await selectOne(lease)).toEqual([{ one: 1 }]);
    lease.release();
  });
});

describe('abort, idle timeout, close', () => {
  it('an aborted acquire leaves the queue with the abort reason', async () => {
    const { pools: p } = pools({ maxPerWorkspace: 1 });
    const a1 = await p.acquire('A');
    const ac = new AbortController();
    const waiting = p.acquire('A', ac.signal);
    expect(p.stats().workspaces.A).toMatchObject({ waiting: 1 });
    const reason = new Error('client went away');
    ac.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(p.stats().workspaces.A).toMatchObject({ waiting: 0 });
    await expect(p.acquire('A', AbortSignal.abort(reason))).rejects.toBe(reason);
    a1.release();
    expect(p.stats().workspaces.A).toMatchObject({ leased: 0, idle: 1 });
  });

  it('closes idle connections after the idle timeout', async () => {
    const { pools: p, tag } = pools({ idleTimeoutMs: 50 });
    const lease = await p.acquire('A');
    const ended = ends(lease.client);
    lease.release();
    await ended;
    expect(p.stats()).toMatchObject({ open: 0, idle: 0 });
    expect(p.stats().workspaces).toEqual({});
    expect(await backends(tag)).toEqual({});
  });

  it('close() during a connect rejects its acquire and closes the connection when it arrives', async () => {
    let arrive!: () => void;
    const gate = new Promise<void>((r) => {
      arrive = r;
    });
    let client: pg.Client | undefined;
    const tag = `tp${++n}_${process.pid}`;
    const p = new TenantPools({
      connect: async (ws) => {
        await gate;
        client = await connectAs(tag)(ws);
        return client;
      },
      maxPerWorkspace: 1,
      maxTotal: 1,
      maxQueuePerWorkspace: 10,
      acquireTimeoutMs: 60_000,
      idleTimeoutMs: 60_000,
    });
    const refused = rejection(p.acquire('A'));
    await p.close();
    arrive();
    expect((await refused).code).toBe('SERVICE_UNAVAILABLE');
    await expect.poll(() => backends(tag)).toEqual({});
    expect(p.stats()).toMatchObject({ open: 0, workspaces: {} });
    expect(client).toBeDefined();
  });

  it('close() rejects waiters, ends idle connections and closes leased ones on release', async () => {
    const { pools: p, tag } = pools({ maxPerWorkspace: 1 });
    const a1 = await p.acquire('A');
    const b = await p.acquire('B');
    b.release();
    const refused = rejection(p.acquire('A'));
    await p.close();
    expect((await refused).code).toBe('SERVICE_UNAVAILABLE');
    expect((await rejection(p.acquire('C'))).code).toBe('SERVICE_UNAVAILABLE');
    expect(await backends(tag)).toEqual({ A: 1 });
    // The leased connection still works until it is returned.
    expect(await selectOne(a1)).toEqual([{ one: 1 }]);
    const ended = ends(a1.client);
    a1.release();
    await ended;
    expect(p.stats().open).toBe(0);
    expect(await backends(tag)).toEqual({});
  });
});

/** Stands in for pg.Client where only the pool's bookkeeping is under test. */
class FakeClient extends EventEmitter {
  readonly connection = new EventEmitter();
  ended = false;
  constructor(readonly ws: string) {
    super();
  }
  end(): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      setImmediate(() => this.emit('end'));
    }
    return Promise.resolve();
  }
  getTransactionStatus() {
    return 'I';
  }
  /** The backend died: what pg does, an 'error' then an 'end'. */
  kill(): void {
    if (this.ended) return;
    this.ended = true;
    this.emit('error', new Error('terminating connection due to administrator command'));
    this.emit('end');
  }
}

describe('invariants under random load (fake connections)', () => {
  const settle = () => new Promise((r) => setImmediate(r)).then(() => new Promise((r) => setImmediate(r)));
  const step = fc.record({
    op: fc.constantFrom('acquire', 'acquire', 'connected', 'connectFailed', 'release', 'releaseBroken', 'kill', 'abort'),
    ws: fc.constantFrom('A', 'B', 'C'),
    i: fc.nat(),
  });

  it('caps hold, nobody waits who could be served, and every acquire ends', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(step, { maxLength: 60 }),
        async (maxPerWorkspace, maxTotal, maxQueuePerWorkspace, steps) => {
          const connects: { ws: string; resolve(c: FakeClient): void; reject(e: unknown): void }[] = [];
          const created: FakeClient[] = [];
          const held: { ws: string; lease: Lease }[] = [];
          const aborts: AbortController[] = [];
          const acquires: ReturnType<typeof track<Lease>>[] = [];
          const p = new TenantPools({
            connect: (ws) =>
              new Promise((resolve, reject) => {
                connects.push({ ws, resolve: resolve as never, reject });
              }),
            // A and B are one principal's workspaces, C another's: the caps hold for A and B together.
            principalOf: (ws) => (ws === 'C' ? 'p2' : 'p1'),
            maxPerWorkspace,
            maxTotal,
            maxQueuePerWorkspace,
            acquireTimeoutMs: 600_000,
            idleTimeoutMs: 600_000,
          });
          const acquire = (ws: string) => {
            const ac = new AbortController();
            aborts.push(ac);
            const t = track(p.acquire(ws, ac.signal));
            acquires.push(t);
            t.promise.then((lease) => {
              expect((lease.client as unknown as FakeClient).ws).toBe(ws);
              held.push({ ws, lease });
            }, () => {});
          };
          const check = () => {
            const s = p.stats();
            expect(s.open).toBeLessThanOrEqual(maxTotal);
            expect(s.open).toBe(s.leased + s.idle + s.connecting);
            expect(s.leased).toBe(held.length);
            // Every client neither lent out nor closed sits idle in the pool.
            expect(s.idle).toBe(created.filter((c) => !c.ended && !held.some((h) => h.lease.client === (c as never))).length);
            for (const [ws, w] of Object.entries(s.workspaces)) {
              const own = s.principals[ws === 'C' ? 'p2' : 'p1']!;
              expect(own.leased + own.connecting).toBeLessThanOrEqual(maxPerWorkspace);
              expect(w.waiting).toBeLessThanOrEqual(maxQueuePerWorkspace);
              // Work-conserving: a waiter waits only for its principal's slots or for the overall cap with nothing idle.
              if (w.waiting > 0) {
                const ownFull = own.leased + own.connecting >= maxPerWorkspace;
                expect(ownFull || (w.idle === 0 && s.open >= maxTotal && s.idle === 0)).toBe(true);
              }
            }
          };
          for (const { op, ws, i } of steps) {
            if (op === 'acquire') acquire(ws);
            else if ((op === 'connected' || op === 'connectFailed') && connects.length > 0) {
              const [c] = connects.splice(i % connects.length, 1);
              if (op === 'connectFailed') c!.reject(new Error('ECONNREFUSED'));
              else {
                const client = new FakeClient(c!.ws);
                created.push(client);
                c!.resolve(client);
              }
            } else if ((op === 'release' || op === 'releaseBroken') && held.length > 0) {
              const [h] = held.splice(i % held.length, 1);
              h!.lease.release(op === 'releaseBroken');
            } else if (op === 'kill' && created.length > 0) {
              created[i % created.length]!.kill();
            } else if (op === 'abort' && aborts.length > 0) {
              aborts[i % aborts.length]!.abort(new Error('aborted'));
            }
            await settle();
            check();
          }
          // Drain: open every pending connection and return every lease until nothing is left.
          while (connects.length > 0 || held.length > 0) {
            for (const c of connects.splice(0)) {
              const client = new FakeClient(c.ws);
              created.push(client);
              c.resolve(client);
            }
            await settle();
            for (const h of held.splice(0)) h.lease.release();
            await settle();
            check();
          }
          expect(acquires.filter((t) => t.state === 'pending')).toHaveLength(0);
          for (const t of acquires) if (t.state === 'rejected') expect(t.error).toBeDefined();
          await p.close();
          await settle();
          expect(p.stats()).toMatchObject({ open: 0, workspaces: {} });
          expect(created.every((c) => c.ended)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('shared cap: a workspace among others holds at most maxPerWorkspaceShared', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('alone, a workspace gets maxPerWorkspace; once another asks, its new statements wait at the shared cap', async () => {
    const { pools: p } = pools({ maxPerWorkspace: 4, maxPerWorkspaceShared: 1, contentionWindowMs: 60_000 });
    // A alone: all four at once.
    const first = await Promise.all([0, 1, 2, 3].map(() => p.acquire('A')));
    expect(p.stats().workspaces.A?.leased).toBe(4);
    for (const l of first) l.release();

    // B asks (and is served): from now on A is among others.
    const b = await p.acquire('B');
    b.release();
    const a1 = await p.acquire('A');
    const a2 = track(p.acquire('A'));
    await expect.poll(() => p.stats().workspaces.A?.waiting).toBe(1); // queued, not served
    expect(a2.state).toBe('pending');
    expect(p.stats().workspaces.A).toMatchObject({ leased: 1, waiting: 1 });
    // B is never held back by A's load.
    const b2 = await p.acquire('B');
    b2.release();
    a1.release();
    (await a2.promise).release();
  });

  it('statements already running are not stopped, and the cap lifts once the others have gone quiet', async () => {
    // The contention window is measured with Date.now(): a frozen clock, moved on by hand, however slow the machine.
    vi.useFakeTimers({ toFake: ['Date'] });
    const { pools: p } = pools({ maxPerWorkspace: 3, maxPerWorkspaceShared: 1, contentionWindowMs: 200 });
    const running = await Promise.all([0, 1, 2].map(() => p.acquire('A')));
    (await p.acquire('B')).release();
    // Three running; a fourth of A waits for both the full cap and the shared one.
    const next = track(p.acquire('A'));
    await expect.poll(() => p.stats().workspaces.A?.waiting).toBe(1);
    for (const l of running.slice(0, 2)) l.release(); // each release hands out what it can at once
    expect(p.stats().workspaces.A).toMatchObject({ leased: 1, waiting: 1 }); // the shared cap while B counts as active
    expect(next.state).toBe('pending');
    vi.setSystemTime(Date.now() + 300); // B's last request is older than the window
    running[2]!.release(); // any pump: A alone again
    (await next.promise).release();
  });

  it('without maxPerWorkspaceShared nothing changes', async () => {
    const { pools: p } = pools({ maxPerWorkspace: 2 });
    (await p.acquire('B')).release();
    const two = await Promise.all([p.acquire('A'), p.acquire('A')]);
    expect(p.stats().workspaces.A?.leased).toBe(2);
    for (const l of two) l.release();
  });
});

describe('by principal: one user, many workspaces, one share', () => {
  /** Workspaces A1..A9 are one user's, B another's. */
  const principalOf = (ws: string) => Promise.resolve(ws.startsWith('A') ? 'user:a' : 'user:b');

  it("one principal's statements over many workspaces hold at most maxPerWorkspace connections together", async () => {
    const { pools: p, tag } = pools({ maxPerWorkspace: 2, maxTotal: 10, principalOf });
    await admin.query('SELECT pg_advisory_lock(7101)');
    // Two statements in each of five workspaces of A's user: per workspace that would be ten connections.
    const leases = ['A1', 'A2', 'A3', 'A4', 'A5'].flatMap((ws) => [ws, ws]).map((ws) => track(p.acquire(ws)));
    await expect.poll(() => leases.filter((l) => l.state === 'fulfilled').length).toBe(2);
    const queries = leases
      .filter((l) => l.state === 'fulfilled')
      .map((l) => track(l.value!.client.query('SELECT pg_advisory_xact_lock_shared(7101)')));
    const blocked = async () =>
      (
        await admin.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE starts_with(application_name, $1) AND wait_event_type = 'Lock'`,
          [`${tag}:A`],
        )
      ).rows[0].n;
    await expect.poll(blocked).toBe(2);
    expect(p.stats().principals['user:a']).toMatchObject({ leased: 2, waiting: 8 });

    // B's user is not behind them: a connection of its own while A's user still has eight waiting.
    const b = await p.acquire('B');
    expect(await selectOne(b)).toEqual([{ one: 1 }]);
    b.release();
    const open = await backends(tag);
    expect(Object.entries(open).filter(([ws]) => ws.startsWith('A')).reduce((n, [, c]) => n + c, 0)).toBe(2);
    expect(leases.filter((l) => l.state === 'pending')).toHaveLength(8);

    await admin.query('SELECT pg_advisory_unlock(7101)');
    await Promise.all(queries.map((q) => q.promise));
    // Each release passes the slot on within A's user, never above two at once, until all ten have run.
    const released = new Set<(typeof leases)[number]>();
    while (released.size < leases.length) {
      await expect.poll(() => leases.some((l) => l.state === 'fulfilled' && !released.has(l))).toBe(true);
      expect(p.stats().principals['user:a']?.leased ?? 0).toBeLessThanOrEqual(2);
      const l = leases.find((x) => x.state === 'fulfilled' && !released.has(x))!;
      released.add(l);
      l.value!.release();
    }
    expect(leases.every((l) => l.state === 'fulfilled')).toBe(true);
  });

  it('among others, a principal holds the shared cap across its workspaces, and the others count as one', async () => {
    const { pools: p } = pools({ maxPerWorkspace: 4, maxPerWorkspaceShared: 1, contentionWindowMs: 60_000, principalOf });
    // A's user alone: four, over four workspaces.
    const first = await Promise.all(['A1', 'A2', 'A3', 'A4'].map((ws) => p.acquire(ws)));
    for (const l of first) l.release();
    // A's other workspaces asking do not make A's user "among others".
    const again = await Promise.all(['A5', 'A6', 'A7', 'A8'].map((ws) => p.acquire(ws)));
    expect(p.stats().principals['user:a']?.leased).toBe(4);
    for (const l of again) l.release();

    (await p.acquire('B')).release();
    const a1 = await p.acquire('A1');
    const a2 = track(p.acquire('A2'));
    await expect.poll(() => p.stats().workspaces.A2?.waiting).toBe(1); // queued, not served
    expect(a2.state).toBe('pending'); // another workspace of the same user: still A's user's one connection
    const b = await p.acquire('B');
    b.release();
    a1.release();
    (await a2.promise).release();
  });
});
