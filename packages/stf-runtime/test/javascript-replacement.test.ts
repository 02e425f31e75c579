/**
 * A run that costs its worker (memory exhausted, a heap grown past the recycling bound, a hard timeout, a crash) holds its queue slot until the fresh worker that
 * replaces it is ready, so the replacement is charged to its workspace, not to whoever's run comes next.
 * Asserted through the runtime's own counters at the moment the run ends, never through timings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { failure, request } from './fixtures/javascript/helpers.js';

/** Ends with kind memory at the run's memory limit. */
const BOMB = 'const keep = []; for (;;) keep.push("x".repeat(8 * 1024 * 1024) + keep.length);';
/** Generous: on a loaded machine the bomb must reach its memory limit before its time limit. */
const LIMITS = { timeoutMs: 60_000 };

/** Resolves once `check` holds (polling; no fixed sleeps). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 4000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('javascript runtime: a retired worker is replaced on its run\'s account', { timeout: 120_000 }, () => {
  let rt: JavascriptRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
    rt = undefined;
  });

  it('after a run that ends with kind memory (its worker retired), its workspace keeps the slot until the fresh worker is ready', async () => {
    rt = createJavascriptRuntime({ workers: 2 });
    const e = await failure(rt.run(request(BOMB, { workspaceId: 'ws-a', principalId: 'user-a', limits: LIMITS })));
    // The same turn of the event loop as the run's end: the fresh worker's "ready" message cannot have come yet.
    expect(e.kind).toBe('memory');
    const held = rt.stats();
    expect(held.workerRecycles).toBe(1);
    expect(held.replacing).toBe(1);
    expect(held.queue.workspaces['ws-a']).toEqual({ running: 1, waiting: 0 });
    expect(held.queue.principals['user-a']).toEqual({ running: 1, waiting: 0 });

    // Another workspace's run meanwhile gets the other, warm worker.
    const other = await rt.run(request('return 7;', { workspaceId: 'ws-b', principalId: 'user-b' }));
    expect(other.output).toBe(7);

    await until(() => rt!.stats().replacing === 0);
    const after = rt.stats();
    expect(after.queue.running).toBe(0);
    expect(after.queue.workspaces).toEqual({});
    expect(after.workers).toBe(2);
    // And the workspace runs again, on the fresh worker or the other.
    expect((await rt.run(request('return 1;', { workspaceId: 'ws-a', principalId: 'user-a' }))).output).toBe(1);
  });

  it('closing the runtime while a replacement starts gives the slot back', async () => {
    rt = createJavascriptRuntime({ workers: 1 });
    const e = await failure(rt.run(request(BOMB, { workspaceId: 'ws-a', limits: LIMITS })));
    expect(e.kind).toBe('memory');
    expect(rt.stats().replacing).toBe(1);
    await rt.close();
    expect(rt.stats().replacing).toBe(0);
    expect(rt.stats().queue.running).toBe(0);
    rt = undefined;
  });
});
