import { describe, expect, it } from 'vitest';
import { FairQueue, type Grant } from '../src/fair-queue.js';
import { StfRuntimeBusy } from '../src/types.js';

const FOREVER = 60_000;

/** Acquires for each key in order and records, in order, which keys were granted a slot. */
function harness(queue: FairQueue) {
  const granted: string[] = [];
  const grants = new Map<string, Grant[]>();
  const ask = (key: string) =>
    queue.acquire(key, FOREVER).then((g) => {
      if (!g) throw new Error('timed out');
      granted.push(key);
      grants.set(key, [...(grants.get(key) ?? []), g]);
      return g;
    });
  /** Releases the oldest slot `key` holds, then lets the grant callbacks run. */
  const finish = async (key: string) => {
    grants.get(key)!.shift()!.release();
    await flush();
  };
  return { granted, ask, finish };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('FairQueue', () => {
  it('hands a freed slot to the waiting workspace with the fewest runs, not to the longest queue', async () => {
    const q = new FairQueue({ capacity: 2, maxQueuedPerWorkspace: 100, slotName: 'workers' });
    const { granted, ask, finish } = harness(q);
    for (let i = 0; i < 10; i++) void ask('A');
    void ask('B');
    await flush();
    expect(granted).toEqual(['A', 'A']);
    await finish('A');
    expect(granted).toEqual(['A', 'A', 'B']); // B before the eight runs A queued earlier
    await finish('A');
    expect(granted.at(-1)).toBe('A'); // nobody else waits: A may use the free slot
    expect(q.stats()).toMatchObject({ running: 2, waiting: 7, workspaces: { A: { running: 1, waiting: 7 }, B: { running: 1, waiting: 0 } } });
  });

  it('takes turns between waiting workspaces (round robin among equals)', async () => {
    const q = new FairQueue({ capacity: 1, maxQueuedPerWorkspace: 100, slotName: 'workers' });
    const { granted, ask, finish } = harness(q);
    void ask('A');
    await flush();
    for (let i = 0; i < 3; i++) void ask('A');
    for (let i = 0; i < 3; i++) void ask('B');
    for (let i = 0; i < 3; i++) void ask('C');
    await flush();
    for (let i = 0; i < 9; i++) await finish(granted.at(-1)!);
    expect(granted).toEqual(['A', 'B', 'C', 'A', 'B', 'C', 'A', 'B', 'C', 'A']);
  });

  it('refuses one run more than maxQueuedPerWorkspace with StfRuntimeBusy, per workspace', async () => {
    const q = new FairQueue({ capacity: 1, maxQueuedPerWorkspace: 2, slotName: 'workers' });
    const first = await q.acquire('A', FOREVER);
    const waiting = [q.acquire('A', FOREVER), q.acquire('A', FOREVER)];
    const refused = await q.acquire('A', FOREVER).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StfRuntimeBusy);
    expect((refused as Error).message).toContain('2 STF runs waiting');
    // Another workspace has a queue of its own.
    const other = q.acquire('B', FOREVER);
    expect(q.stats().waiting).toBe(3);
    // Each waiting run gets the slot in turn (B first: it has none running) as the one before releases it.
    const order: string[] = [];
    const tagged = [...waiting.map((p) => p.then((g) => ({ g, key: 'A' }))), other.then((g) => ({ g, key: 'B' }))];
    for (const t of tagged) void t.then(({ g, key }) => { order.push(key); (g as Grant).release(); });
    (first as Grant).release();
    await Promise.all(tagged);
    expect(order).toEqual(['B', 'A', 'A']);
    expect(q.stats()).toEqual({ running: 0, waiting: 0, workspaces: {}, principals: {} });
  });

  it('gives up on a run whose wait reaches maxWaitMs, before any run ahead of it ends', async () => {
    const q = new FairQueue({ capacity: 1, maxQueuedPerWorkspace: 10, slotName: 'workers' });
    const holder = (await q.acquire('A', FOREVER)) as Grant;
    expect(await q.acquire('A', 50)).toBe(false);
    expect(q.stats()).toMatchObject({ running: 1, waiting: 0 });
    holder.release();
    const g = (await q.acquire('A', 50)) as Grant;
    expect(g.waitedMs).toBeGreaterThanOrEqual(0);
    g.release();
  });

  it('with maxRunningPerWorkspace, keeps slots free for others even when nobody else waits', async () => {
    const q = new FairQueue({ capacity: 2, maxQueuedPerWorkspace: 10, maxRunningPerWorkspace: 1, slotName: 'workers' });
    const { granted, ask } = harness(q);
    void ask('A');
    void ask('A');
    await flush();
    expect(granted).toEqual(['A']);
    void ask('B');
    await flush();
    expect(granted).toEqual(['A', 'B']);
  });

  it('rejects waiting runs on close and refuses new ones', async () => {
    const q = new FairQueue({ capacity: 1, maxQueuedPerWorkspace: 10, slotName: 'workers' });
    await q.acquire('A', FOREVER);
    const waiting = q.acquire('A', FOREVER);
    q.close();
    await expect(waiting).rejects.toThrow(/closed/);
    await expect(q.acquire('B', FOREVER)).rejects.toThrow(/closed/);
  });

  describe('by principal first (one user, many workspaces)', () => {
    /** Workspaces A1..A4 are one principal's, B another's. */
    const principalOf = (ws: string) => (ws.startsWith('A') ? 'user:a' : 'user:b');
    const ask = (q: FairQueue, granted: string[], ws: string) =>
      q.acquire(ws, FOREVER, principalOf(ws)).then((g) => {
        if (!g) throw new Error('timed out');
        granted.push(ws);
        return g;
      });

    it('many workspaces of one principal hold at most maxRunningPerWorkspace slots together; another finds a free one', async () => {
      const q = new FairQueue({ capacity: 2, maxRunningPerWorkspace: 1, maxQueuedPerWorkspace: 10, slotName: 'workers' });
      const granted: string[] = [];
      const a = ['A1', 'A2', 'A3', 'A4'].map((ws) => ask(q, granted, ws));
      await flush();
      // Per workspace, each of A1..A4 would have had one of its own: two slots for A's user.
      expect(granted).toEqual(['A1']);
      expect(q.stats().principals).toEqual({ 'user:a': { running: 1, waiting: 3 } });
      const b = await ask(q, granted, 'B');
      expect(granted).toEqual(['A1', 'B']);
      b.release();
      await flush();
      expect(granted).toEqual(['A1', 'B']); // the free slot stays free: A's user is at its bound
      (await a[0]!).release();
      await flush();
      expect(granted).toEqual(['A1', 'B', 'A2']);
      for (const g of a.slice(1)) {
        (await g).release();
        await flush();
      }
      expect(granted).toEqual(['A1', 'B', 'A2', 'A3', 'A4']);
      expect(q.stats()).toEqual({ running: 0, waiting: 0, workspaces: {}, principals: {} });
    });

    it('a freed slot goes to the principal with fewer runs, whatever the number of its workspaces; within one, workspaces take turns', async () => {
      const q = new FairQueue({ capacity: 1, maxQueuedPerWorkspace: 100, slotName: 'workers' });
      const granted: string[] = [];
      const grants: Grant[] = [];
      const take = (ws: string) => void ask(q, granted, ws).then((g) => grants.push(g));
      take('A1');
      await flush();
      for (const ws of ['A1', 'A2', 'A3', 'A1', 'A2', 'A3']) take(ws);
      take('B');
      take('B');
      await flush();
      for (let i = 0; i < 8; i++) {
        grants.shift()!.release();
        await flush();
      }
      // B's user alternates with A's, not with each of A's workspaces; A's workspaces take turns among themselves.
      expect(granted).toEqual(['A1', 'B', 'A2', 'B', 'A3', 'A1', 'A2', 'A3', 'A1']);
    });
  });
});
