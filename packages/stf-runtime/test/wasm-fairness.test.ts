/**
 * The wasm runtime's plugin slots are shared fairly between workspaces, like the JavaScript workers. The plugin
 * (fixtures/wasm/sql.wat) calls sql() once; the test's callback records which run reached it and holds it there
 * until the test lets it go, so what is asserted is the order runs started in, never a duration.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, StfError, StfRuntimeBusy, type StfLimits, type StfRunRequest } from '../src/types.js';
import { createWasmRuntime, type WasmRuntime } from '../src/wasm/index.js';
import { fixture } from './fixtures/wasm/build.js';

function gated(started: string[], gates: Map<string, () => void>, workspaceId: string, name: string, limits: Partial<StfLimits> = {}): StfRunRequest {
  return {
    code: fixture('sql'),
    input: null,
    sources: {},
    caller: null,
    secrets: {},
    workspaceId,
    limits: { ...DEFAULT_LIMITS, timeoutMs: 30_000, ...limits },
    sql: () => {
      started.push(name);
      return new Promise((resolve) => gates.set(name, () => resolve([{ name }])));
    },
  };
}

async function open(gates: Map<string, () => void>, name: string): Promise<void> {
  for (let i = 0; i < 4000 && !gates.has(name); i++) await new Promise((r) => setTimeout(r, 5));
  gates.get(name)!();
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: Error) => e,
  );
}

describe('wasm runtime: fair sharing between workspaces', () => {
  let rt: WasmRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
    rt = undefined;
  });

  it('runs at most `concurrency` plugins, serves a waiting workspace before another one\'s queue, refuses a full queue', async () => {
    rt = createWasmRuntime({ concurrency: 1, maxQueuedPerWorkspace: 2 });
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const a = ['a0', 'a1', 'a2'].map((n) => rt!.run(gated(started, gates, 'ws-a', n)));
    const refused = await rejection(rt.run(gated(started, gates, 'ws-a', 'a3')));
    expect(refused).toBeInstanceOf(StfRuntimeBusy);
    expect(refused.message).toMatch(/2 STF runs waiting for one of the 1 wasm plugin slots/);
    const b = rt.run(gated(started, gates, 'ws-b', 'b0'));
    expect(rt.stats().queue.workspaces).toEqual({ 'ws-a': { running: 1, waiting: 2 }, 'ws-b': { running: 0, waiting: 1 } });

    for (const name of ['a0', 'b0', 'a1', 'a2']) await open(gates, name);
    expect((await Promise.all([...a, b])).map((r) => r.output)).toEqual(['a0', 'a1', 'a2', 'b0'].map((name) => ({ rows: [{ name }] })));
    expect(started).toEqual(['a0', 'b0', 'a1', 'a2']);
  });

  it('counts the wait for a slot against the time limit: a run that waited it all fails with timeout unrun', async () => {
    rt = createWasmRuntime({ concurrency: 1 });
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const holder = rt.run(gated(started, gates, 'ws-a', 'holder'));
    let holderDone = false;
    void holder.then(() => (holderDone = true));
    const e = await rejection(rt.run(gated(started, gates, 'ws-b', 'waiter', { timeoutMs: 200 })));
    expect(e).toBeInstanceOf(StfError);
    expect((e as StfError).kind).toBe('timeout');
    expect((e as StfError).details).toMatch(/waiting for one of the 1 wasm plugin slots and did not run/);
    expect(holderDone).toBe(false);
    expect(started).not.toContain('waiter');
    await open(gates, 'holder');
    await holder;
  });
});
