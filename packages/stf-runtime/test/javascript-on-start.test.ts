import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { StfRuntimeBusy } from '../src/types.js';
import { failure, request } from './fixtures/javascript/helpers.js';

let rt: JavascriptRuntime;
beforeAll(() => {
  rt = createJavascriptRuntime({ workers: 1, maxQueuedPerWorkspace: 1 });
});
afterAll(() => rt.close());

describe('javascript runtime: onStart', () => {
  it('is called once, when the worker has the run, for runs that answer and runs that fail', async () => {
    let calls = 0;
    expect((await rt.run(request('return 1', { onStart: () => calls++ }))).output).toBe(1);
    expect(calls).toBe(1);
    expect((await failure(rt.run(request('throw new Error("x")', { onStart: () => calls++ })))).kind).toBe('runtime');
    expect(calls).toBe(2);
  });

  it('is not called for a run refused by the queue, and a throwing onStart does not break the run', async () => {
    const started: string[] = [];
    const long = rt.run(request('const until = Date.now() + 200; while (Date.now() < until) {} return "long"', { workspaceId: 'w', onStart: () => started.push('long') }));
    const queued = rt.run(request('return "queued"', { workspaceId: 'w', onStart: () => started.push('queued') }));
    const refused = await failure(rt.run(request('return "refused"', { workspaceId: 'w', onStart: () => started.push('refused') })));
    expect(refused).toBeInstanceOf(StfRuntimeBusy);
    expect((await long).output).toBe('long');
    expect((await queued).output).toBe('queued');
    expect(started).toEqual(['long', 'queued']);
    const r = await rt.run(request('return 2', { onStart: () => { throw new Error('caller bug'); } }));
    expect(r.output).toBe(2);
  });
});
