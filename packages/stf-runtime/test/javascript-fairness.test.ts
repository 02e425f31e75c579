/**
 * Fair sharing of the JavaScript workers between workspaces. Every STF here reports its start through sql("start …")
 * as its first statement, so the tests assert the order in which runs started — never how long anything took.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { StfRuntimeBusy, type StfRunRequest } from '../src/types.js';
import { failure, request } from './fixtures/javascript/helpers.js';

/** A run of `workspace` that reports its start, then waits for the test to let it finish. */
function gated(log: string[], gates: Map<string, () => void>, workspace: string, name: string, limits: Partial<StfRunRequest['limits']> = {}) {
  return request(`sql("start ${name}");\nsql("finish ${name}");\nreturn "${name}";`, {
    workspaceId: workspace,
    limits,
    sql: (query: string) => {
      if (query.startsWith('start ')) {
        log.push(query.slice(6));
        return Promise.resolve([]);
      }
      return new Promise((resolve) => gates.set(name, () => resolve([])));
    },
  });
}

/** Lets the gated run `name` finish, once it has reached its gate. */
async function open(gates: Map<string, () => void>, name: string): Promise<void> {
  await until(() => gates.has(name));
  gates.get(name)!();
}

/** Resolves once `check` holds (polling; no fixed sleeps). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('javascript runtime: fair sharing between workspaces', () => {
  let rt: JavascriptRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
    rt = undefined;
  });

  it("a workspace's queued runs do not delay another workspace's run by more than the runs in progress", async () => {
    rt = createJavascriptRuntime({ workers: 2 });
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const a = Array.from({ length: 8 }, (_, i) => rt!.run(gated(started, gates, 'ws-a', `a${i}`)));
    const b = rt.run(gated(started, gates, 'ws-b', 'b0'));
    await until(() => started.length === 2);
    expect([...started].sort()).toEqual(['a0', 'a1']); // one on each worker, in either order
    expect(rt.stats().queue.workspaces).toEqual({ 'ws-a': { running: 2, waiting: 6 }, 'ws-b': { running: 0, waiting: 1 } });

    // The first worker that frees up goes to ws-b, not to the six runs ws-a queued before it.
    await open(gates, started[0]!);
    await until(() => started.length === 3);
    expect(started[2]).toBe('b0');

    // Then ws-a has the workers to itself again.
    await open(gates, 'b0');
    expect((await b).output).toBe('b0');
    for (let i = 0; i < 8; i++) await open(gates, `a${i}`);
    expect((await Promise.all(a)).map((r) => r.output)).toEqual(Array.from({ length: 8 }, (_, i) => `a${i}`));
    expect(started.indexOf('b0')).toBe(2);
  });

  it('counts the time a run waits for a worker against its time limit: it fails with timeout without running', async () => {
    rt = createJavascriptRuntime({ workers: 1 });
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const holder = rt.run(gated(started, gates, 'ws-a', 'holder', { timeoutMs: 30_000 }));
    await until(() => started.length === 1);
    let holderDone = false;
    void holder.then(() => (holderDone = true));
    const waiter = rt.run(gated(started, gates, 'ws-b', 'waiter', { timeoutMs: 200 }));

    const e = await failure(waiter);
    expect(e.kind).toBe('timeout');
    expect(e.message).toBe('The STF ran longer than 200 ms');
    expect(e.details).toMatch(/waiting for one of the 1 JavaScript workers and did not run/);
    expect(e.logs).toEqual([]);
    // It failed while the run ahead of it was still in progress, and it never started.
    expect(holderDone).toBe(false);
    expect(started).toEqual(['holder']);

    await open(gates, 'holder');
    expect((await holder).output).toBe('holder');
    expect(rt.stats().queue).toEqual({ running: 0, waiting: 0, workspaces: {}, principals: {} });
  });

  it('refuses a run beyond the per-workspace queue with StfRuntimeBusy; other workspaces still queue', async () => {
    rt = createJavascriptRuntime({ workers: 1, maxQueuedPerWorkspace: 2 });
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const a = [0, 1, 2].map((i) => rt!.run(gated(started, gates, 'ws-a', `a${i}`)));
    const refused = await failure(rt.run(gated(started, gates, 'ws-a', 'a3')));
    expect(refused).toBeInstanceOf(StfRuntimeBusy);
    expect(refused.message).toMatch(/already has 2 STF runs waiting for one of the 1 JavaScript workers/);
    const b = rt.run(gated(started, gates, 'ws-b', 'b0'));
    expect(rt.stats().queue.workspaces).toEqual({ 'ws-a': { running: 1, waiting: 2 }, 'ws-b': { running: 0, waiting: 1 } });

    for (const name of ['a0', 'b0', 'a1', 'a2']) await open(gates, name);
    await Promise.all([...a, b]);
    expect(started).toEqual(['a0', 'b0', 'a1', 'a2']);
  });

  it('with maxRunningPerWorkspace, one workspace never holds every worker', async () => {
    rt = createJavascriptRuntime({ workers: 2, maxRunningPerWorkspace: 1 });
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const a = [0, 1].map((i) => rt!.run(gated(started, gates, 'ws-a', `a${i}`)));
    await until(() => started.length === 1);
    const b = rt.run(gated(started, gates, 'ws-b', 'b0'));
    await until(() => started.length === 2);
    expect(started).toEqual(['a0', 'b0']);
    for (const name of ['a0', 'b0', 'a1']) await open(gates, name);
    await Promise.all([...a, b]);
  });
});
