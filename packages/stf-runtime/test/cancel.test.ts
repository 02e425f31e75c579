/**
 * StfRunRequest.signal (issue 33): a run whose caller went away is stopped and gives its slot back — the JavaScript
 * guest interrupted (also while it waits for an sql() answer), the wasm plugin's worker terminated, a run still
 * waiting for a slot taken out of the queue. Each runtime has one slot and runs may take a minute, so a second run
 * completing proves the first no longer holds it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime } from '../src/javascript/index.js';
import { DEFAULT_LIMITS, StfRunCancelled, type StfRunRequest } from '../src/types.js';
import { createWasmRuntime } from '../src/wasm/index.js';
import { request } from './fixtures/javascript/helpers.js';
import { fixture } from './fixtures/wasm/build.js';

const MINUTE = { timeoutMs: 60_000 };

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 4000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('javascript runtime: a cancelled run', () => {
  const rt = createJavascriptRuntime({ workers: 1, prewarm: false });
  afterAll(() => rt.close());

  it('is interrupted while it loops, and the next run gets the worker', async () => {
    const abort = new AbortController();
    const spinning = rt.run(request('while (true) {}', { workspaceId: 'a', limits: MINUTE, signal: abort.signal }));
    spinning.catch(() => undefined);
    await until(() => rt.stats().queue.running === 1);
    abort.abort();
    await expect(spinning).rejects.toBeInstanceOf(StfRunCancelled);
    expect(rt.stats().queue.running).toBe(0);
    const next = await rt.run(request('return 1 + 1;', { workspaceId: 'a', limits: MINUTE }));
    expect(next.output).toBe(2);
  });

  it('is woken and interrupted while it waits for an sql() answer that never comes', async () => {
    const abort = new AbortController();
    let asked = false;
    const waiting = rt.run(
      request('sql("select 1"); return 1;', {
        workspaceId: 'a',
        limits: MINUTE,
        signal: abort.signal,
        sql: () => {
          asked = true;
          return new Promise(() => undefined);
        },
      }),
    );
    waiting.catch(() => undefined);
    await until(() => asked);
    abort.abort();
    await expect(waiting).rejects.toBeInstanceOf(StfRunCancelled);
    expect((await rt.run(request('return 3;', { workspaceId: 'a', limits: MINUTE }))).output).toBe(3);
  });

  it('leaves the queue while it waits for the worker, and one cancelled before it asked never runs', async () => {
    const holder = new AbortController();
    const holding = rt.run(request('while (true) {}', { workspaceId: 'a', limits: MINUTE, signal: holder.signal }));
    holding.catch(() => undefined);
    await until(() => rt.stats().queue.running === 1);
    const abort = new AbortController();
    const queued = rt.run(request('return 1;', { workspaceId: 'b', limits: MINUTE, signal: abort.signal }));
    await until(() => rt.stats().queue.waiting === 1);
    abort.abort();
    await expect(queued).rejects.toBeInstanceOf(StfRunCancelled);
    expect(rt.stats().queue.waiting).toBe(0);
    holder.abort();
    await expect(holding).rejects.toBeInstanceOf(StfRunCancelled);
    await expect(rt.run(request('return 1;', { workspaceId: 'a', signal: AbortSignal.abort() }))).rejects.toBeInstanceOf(StfRunCancelled);
  });
});

describe('wasm runtime: a cancelled run', () => {
  const rt = createWasmRuntime({ concurrency: 1 });
  afterAll(() => rt.close());
  const run = (code: Uint8Array, signal?: AbortSignal): StfRunRequest => ({
    code,
    input: { n: 1 },
    sources: {},
    caller: null,
    secrets: {},
    workspaceId: 'a',
    limits: { ...DEFAULT_LIMITS, ...MINUTE },
    ...(signal ? { signal } : {}),
  });

  it('has its plugin worker terminated while it loops, and the next run gets the slot', async () => {
    const abort = new AbortController();
    const looping = rt.run(run(fixture('loop'), abort.signal));
    looping.catch(() => undefined);
    await until(() => rt.stats().queue.running === 1);
    abort.abort();
    await expect(looping).rejects.toBeInstanceOf(StfRunCancelled);
    expect(rt.stats().activeRuns).toBe(0);
    const next = await rt.run(run(fixture('echo')));
    expect(next.output).toMatchObject({ echo: { input: { n: 1 } } });
  });
});
