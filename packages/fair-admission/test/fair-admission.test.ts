import { afterEach, describe, expect, it, vi } from 'vitest';
import { AdmissionRefused, FairAdmission, type FairAdmissionOptions, type Grant, type WaitOptions } from '../src/index.js';

/** Waits through `enter` (grants arrive synchronously) and records, in order, which keys were granted. */
function harness(opts: FairAdmissionOptions) {
  const admission = new FairAdmission(opts);
  const granted: string[] = [];
  const refused: { key: string; reason: unknown }[] = [];
  const held = new Map<string, Grant[]>();
  const ask = (key: string, options: WaitOptions = {}) =>
    admission.enter(key, options, {
      granted: (g) => {
        granted.push(key);
        held.set(key, [...(held.get(key) ?? []), g]);
      },
      refused: (reason) => refused.push({ key, reason }),
    });
  /** Releases the oldest place `key` holds. */
  const finish = (key: string) => held.get(key)?.shift()?.release();
  /** Nothing of the admission is left: no key, no group, no timer. */
  const empty = () => {
    const s = admission.stats();
    expect({ running: s.running, waiting: s.waiting, keys: Object.keys(s.keys).length, groups: Object.keys(s.groups).length }).toEqual({
      running: 0,
      waiting: 0,
      keys: 0,
      groups: 0,
    });
    expect([...admission.activeGroups()]).toEqual([]);
  };
  return { admission, granted, refused, ask, finish, empty, held };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('order', () => {
  it('a freed place goes to the waiting key with the fewest running, not to the longest queue', () => {
    const { admission, granted, ask, finish } = harness({ capacity: 2 });
    for (let i = 0; i < 10; i++) ask('A');
    ask('B');
    expect(granted).toEqual(['A', 'A']);
    finish('A');
    expect(granted).toEqual(['A', 'A', 'B']); // B before the eight A queued earlier
    finish('A');
    expect(granted.at(-1)).toBe('A'); // nobody else waits: A takes the free place
    expect(admission.stats()).toMatchObject({ running: 2, waiting: 7, keys: { A: { running: 1, waiting: 7 }, B: { running: 1, waiting: 0 } } });
  });

  it('among keys running as many, the one served longest ago goes first (round robin)', () => {
    const { granted, ask, finish } = harness({ capacity: 1 });
    ask('A');
    for (const key of ['A', 'A', 'A', 'B', 'B', 'B', 'C', 'C', 'C']) ask(key);
    for (let i = 0; i < 9; i++) finish(granted.at(-1) as string);
    expect(granted).toEqual(['A', 'B', 'C', 'A', 'B', 'C', 'A', 'B', 'C', 'A']);
  });

  it('within a key, first come first served', () => {
    const { admission } = harness({ capacity: 1 });
    const order: number[] = [];
    const grants: Grant[] = [];
    for (let i = 0; i < 4; i++) {
      const granted = (g: Grant) => {
        order.push(i);
        grants.push(g);
      };
      admission.enter('A', {}, { granted, refused: () => {} });
    }
    while (grants.length > 0) grants.shift()?.release();
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it('groups first: a group with many keys gets no more turns than a group with one; its keys take turns', () => {
    const { granted, ask, finish } = harness({ capacity: 1 });
    ask('A1', { group: 'a' });
    for (const key of ['A1', 'A2', 'A3', 'A1', 'A2', 'A3']) ask(key, { group: 'a' });
    for (let i = 0; i < 3; i++) ask('B', { group: 'b' });
    for (let i = 0; i < 6; i++) finish(granted.at(-1) as string);
    expect(granted).toEqual(['A1', 'B', 'A2', 'B', 'A3', 'B', 'A1']);
  });
});

describe('caps', () => {
  it('capacity bounds the grants of every key together', () => {
    const { admission, ask, finish } = harness({ capacity: 3 });
    for (const key of ['A', 'B', 'C', 'D', 'A']) ask(key);
    expect(admission.stats()).toMatchObject({ running: 3, waiting: 2 });
    finish('A');
    expect(admission.stats()).toMatchObject({ running: 3, waiting: 1, keys: { D: { running: 1, waiting: 0 } } });
  });

  it('maxRunningPerKey holds even with free places; another key takes them', () => {
    const { admission, ask } = harness({ capacity: 4, maxRunningPerKey: 2 });
    for (let i = 0; i < 4; i++) ask('A');
    ask('B');
    expect(admission.stats()).toMatchObject({ running: 3, keys: { A: { running: 2, waiting: 2 }, B: { running: 1, waiting: 0 } } });
  });

  it('maxRunningPerGroup holds across the keys of a group', () => {
    const { admission, ask, finish } = harness({ capacity: 10, maxRunningPerGroup: 2 });
    for (const key of ['A1', 'A2', 'A3', 'A4']) ask(key, { group: 'a' });
    ask('B', { group: 'b' });
    expect(admission.stats().groups).toEqual({ a: { running: 2, waiting: 2 }, b: { running: 1, waiting: 0 } });
    finish('A1');
    expect(admission.stats().keys).toMatchObject({ A3: { running: 1, waiting: 0 }, A4: { running: 0, waiting: 1 } });
  });

  it('a cap given as a function is read once per pump; pump() applies a cap that rose', () => {
    let cap = 1;
    const seen: string[] = [];
    const factory = vi.fn(() => (g: { group: string }) => {
      seen.push(g.group);
      return cap;
    });
    const { admission, ask } = harness({ capacity: 10, maxRunningPerGroup: factory });
    ask('A');
    ask('A');
    expect(admission.load('A')).toEqual({ running: 1, waiting: 1 });
    expect(factory).toHaveBeenCalledTimes(2); // one per pump: each wait pumps once
    cap = 2;
    expect(admission.load('A')).toEqual({ running: 1, waiting: 1 }); // nothing pumped yet
    admission.pump();
    expect(admission.load('A')).toEqual({ running: 2, waiting: 0 });
    expect(factory).toHaveBeenCalledTimes(3);
    expect(new Set(seen)).toEqual(new Set(['A']));
  });

  it('maxWaitingPerKey: one waiter more is refused at once (full) with the load it found; a free place is granted even at 0', () => {
    const { refused, ask, granted, admission } = harness({ capacity: 1, maxWaitingPerKey: 2 });
    for (let i = 0; i < 4; i++) ask('A');
    expect(granted).toEqual(['A']);
    expect(refused).toHaveLength(1);
    const r = refused[0]!.reason as AdmissionRefused;
    expect(r).toBeInstanceOf(AdmissionRefused);
    expect([r.reason, r.load]).toEqual(['full', { running: 1, waiting: 2 }]);
    ask('B'); // per key: B may still wait
    expect(admission.load('B')).toEqual({ running: 0, waiting: 1 });

    const none = harness({ capacity: 1, maxWaitingPerKey: 0 });
    none.ask('A');
    none.ask('A');
    expect(none.granted).toEqual(['A']);
    expect((none.refused[0]!.reason as AdmissionRefused).reason).toBe('full');
  });

  it('rejects caps that admit nothing', () => {
    expect(() => new FairAdmission({ capacity: 0 })).toThrow(RangeError);
    expect(() => new FairAdmission({ maxRunningPerKey: 0 })).toThrow(RangeError);
    expect(() => new FairAdmission({ maxWaitingPerKey: -1 })).toThrow(RangeError);
  });
});

describe('ending a wait', () => {
  it('a wait that reaches its timeout is refused (timeout) before the place ahead of it frees, and leaves its queue', () => {
    vi.useFakeTimers();
    const { admission, ask, refused, granted, finish, empty } = harness({ capacity: 1 });
    ask('A');
    ask('B', { timeoutMs: 100 });
    ask('C');
    vi.advanceTimersByTime(99);
    expect(refused).toEqual([]);
    vi.advanceTimersByTime(1);
    const r = refused[0]!.reason as AdmissionRefused;
    expect([refused[0]?.key, r.reason, r.load]).toEqual(['B', 'timeout', { running: 0, waiting: 0 }]);
    expect(r.waitedMs).toBeGreaterThanOrEqual(100);
    expect(admission.load('B')).toEqual({ running: 0, waiting: 0 });
    finish('A');
    expect(granted).toEqual(['A', 'C']);
    finish('C');
    empty();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a granted wait clears its timer; a timeout beyond setTimeout’s range still waits', () => {
    vi.useFakeTimers();
    const { ask, finish, granted, refused, empty } = harness({ capacity: 1 });
    ask('A');
    ask('B', { timeoutMs: 2 ** 40 });
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(60_000);
    finish('A');
    expect(granted).toEqual(['A', 'B']);
    expect(vi.getTimerCount()).toBe(0);
    finish('B');
    expect(refused).toEqual([]);
    empty();
  });

  it('an aborted wait is refused with the signal’s reason, leaves its queue and its listener', () => {
    const { admission, ask, refused, finish, empty } = harness({ capacity: 1 });
    const ac = new AbortController();
    const remove = vi.spyOn(ac.signal, 'removeEventListener');
    ask('A');
    ask('B', { signal: ac.signal });
    const why = new Error('gone');
    ac.abort(why);
    expect(refused).toEqual([{ key: 'B', reason: why }]);
    expect(admission.load('B')).toEqual({ running: 0, waiting: 0 });
    expect(remove).toHaveBeenCalledTimes(1);
    // Already aborted: refused at once, nothing remembered.
    ask('C', { signal: ac.signal });
    expect(refused.at(-1)).toEqual({ key: 'C', reason: why });
    finish('A');
    empty();
  });

  it('a granted wait removes its abort listener; aborting later changes nothing', () => {
    const { ask, granted, refused, finish, empty } = harness({ capacity: 1 });
    const ac = new AbortController();
    const add = vi.spyOn(ac.signal, 'addEventListener');
    const remove = vi.spyOn(ac.signal, 'removeEventListener');
    ask('A');
    ask('B', { signal: ac.signal });
    finish('A');
    expect(granted).toEqual(['A', 'B']);
    expect([add.mock.calls.length, remove.mock.calls.length]).toEqual([1, 1]);
    ac.abort();
    expect(refused).toEqual([]);
    finish('B');
    empty();
  });

  it('cancel ends a waiting ticket with its reason, and does nothing once granted', () => {
    const { ask, refused, granted, finish, empty } = harness({ capacity: 1 });
    const a = ask('A');
    const b = ask('B');
    b.cancel('changed my mind');
    a.cancel('too late');
    expect(refused).toEqual([{ key: 'B', reason: 'changed my mind' }]);
    expect(granted).toEqual(['A']);
    finish('A');
    empty();
  });

  it('close refuses the waiting (with the reason) and new waits (closed); grants in progress release as they end', () => {
    const { admission, ask, refused, granted, finish, empty } = harness({ capacity: 1 });
    ask('A');
    ask('A');
    ask('B', { group: 'b' });
    const why = new Error('shutting down');
    admission.close(why);
    expect(admission.closed).toBe(true);
    expect(refused).toEqual([
      { key: 'A', reason: why },
      { key: 'B', reason: why },
    ]);
    ask('C');
    expect((refused.at(-1)!.reason as AdmissionRefused).reason).toBe('closed');
    finish('A');
    expect(granted).toEqual(['A']);
    empty();
  });

  it('close without a reason refuses the waiting as closed', () => {
    const { admission, ask, refused, finish } = harness({ capacity: 1 });
    ask('A');
    ask('A');
    admission.close();
    expect((refused[0]!.reason as AdmissionRefused).reason).toBe('closed');
    finish('A');
  });
});

describe('grants', () => {
  it('release is idempotent, and a freed place is granted synchronously inside it', () => {
    const { admission, ask, granted, held, empty } = harness({ capacity: 1 });
    ask('A');
    ask('B');
    const a = held.get('A')?.[0] as Grant;
    a.release();
    expect(granted).toEqual(['A', 'B']);
    a.release();
    expect(admission.stats()).toMatchObject({ running: 1, waiting: 0 });
    held.get('B')?.[0]?.release();
    empty();
  });

  it('acquire is the promise form: resolves with the grant, rejects with the refusal', async () => {
    const admission = new FairAdmission({ capacity: 1, maxWaitingPerKey: 1 });
    const g = await admission.acquire('A');
    const next = admission.acquire('B', { timeoutMs: 60_000 });
    const refusal = await admission.acquire('B').catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(AdmissionRefused);
    g.release();
    const b = await next;
    expect(b.waitedMs).toBeGreaterThanOrEqual(0);
    b.release();
    expect(admission.stats()).toEqual({ running: 0, waiting: 0, keys: {}, groups: {} });
  });

  it('leaves no key, group or timer behind after a random mix of grants, timeouts, aborts and refusals', () => {
    vi.useFakeTimers();
    const { admission, ask, held, granted, refused, empty } = harness({ capacity: 3, maxRunningPerKey: 2, maxRunningPerGroup: 2, maxWaitingPerKey: 3 });
    const controllers: AbortController[] = [];
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let asked = 0;
    for (let step = 0; step < 400; step++) {
      const op = rnd(5);
      const key = `k${rnd(6)}`;
      if (op <= 1) {
        const ac = new AbortController();
        controllers.push(ac);
        ask(key, { group: `g${rnd(3)}`, timeoutMs: rnd(50), signal: ac.signal });
        asked++;
      } else if (op === 2) {
        const list = [...held.values()].find((l) => l.length > 0);
        list?.shift()?.release();
      } else if (op === 3) {
        controllers[rnd(controllers.length)]?.abort();
      } else {
        vi.advanceTimersByTime(rnd(20));
      }
      const s = admission.stats();
      expect(s.running).toBeLessThanOrEqual(3);
      for (const g of Object.values(s.groups)) expect(g.running).toBeLessThanOrEqual(2);
    }
    for (const ac of controllers) ac.abort();
    for (const list of held.values()) while (list.length > 0) list.shift()?.release();
    expect(granted.length + refused.length).toBe(asked);
    empty();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('contention: a lower group cap while another group is active', () => {
  it('a group alone takes every place; once another asks, it starts no more than the shared cap until the window passes', () => {
    vi.useFakeTimers();
    const { admission, granted, ask, finish, empty } = harness({ capacity: 4, maxRunningPerGroup: 4, contention: { maxRunningPerGroup: 1, windowMs: 2000 } });
    for (let i = 0; i < 6; i++) ask('A');
    expect(granted).toEqual(['A', 'A', 'A', 'A']); // alone: all four

    ask('B'); // every place is A's: B waits
    expect(admission.stats().keys.B).toEqual({ running: 0, waiting: 1 });
    finish('A');
    expect(granted.at(-1)).toBe('B');
    // A holds 3 (never taken back) and may start none while B is active: over its shared cap of 1.
    finish('A');
    finish('A');
    expect(admission.stats().keys.A).toEqual({ running: 1, waiting: 2 });
    finish('A');
    expect(admission.stats().keys.A).toEqual({ running: 1, waiting: 1 }); // back at its shared cap: one more started
    finish('B');
    // B is done but asked within the window: A still counts as contended.
    finish('A');
    expect(admission.stats().keys.A).toEqual({ running: 1, waiting: 0 });
    finish('A');
    expect(admission.stats().running).toBe(0);

    // After the window, A alone again takes every place.
    vi.advanceTimersByTime(2000);
    for (let i = 0; i < 4; i++) ask('A');
    expect(admission.stats().keys.A).toEqual({ running: 4, waiting: 0 });
    for (let i = 0; i < 4; i++) finish('A');
    empty();
  });

  it('a group that asked within the window counts as active although it runs and waits for nothing', () => {
    vi.useFakeTimers();
    const { admission, ask, finish } = harness({ capacity: 2, contention: { maxRunningPerGroup: 1, windowMs: 1000 } });
    ask('B');
    finish('B');
    ask('A');
    ask('A');
    expect(admission.stats().keys.A).toEqual({ running: 1, waiting: 1 });
    vi.advanceTimersByTime(1000);
    admission.pump(); // a cap that rose with time is applied at the next pump
    expect(admission.stats().keys.A).toEqual({ running: 2, waiting: 0 });
  });

  it('a shared cap at or above the group cap changes nothing', () => {
    const { admission, ask } = harness({ capacity: 3, maxRunningPerGroup: 2, contention: { maxRunningPerGroup: 5, windowMs: 1000 } });
    ask('B');
    for (let i = 0; i < 3; i++) ask('A');
    expect(admission.stats().keys.A).toEqual({ running: 2, waiting: 1 });
  });
});
