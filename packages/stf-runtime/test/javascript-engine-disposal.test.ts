/**
 * A run's engine is disposed cleanly, so the worker keeps its QuickJS module: runs that allocate megabytes after an
 * `await` used to make quickjs-emscripten's executePendingJobs create a stray JSContext (it read the job's context
 * through a view of the WASM memory that the job's growth had detached), and disposing the runtime then aborted the
 * module on `list_empty(&rt->gc_obj_list)` — an engine reset after every such run. engine.ts readOutParametersLive.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOutParametersLive, runInEngine } from '../src/javascript/engine.js';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { compileQuickJS, heapBytes, heapMaximumFor, newBoundedQuickJS } from '../src/javascript/quickjs-module.js';
import { engineHost, engineJob, failure, request } from './fixtures/javascript/helpers.js';

/** Grows the WASM heap inside promise jobs: 20 MB kept, an `await` between allocations. */
const GROW_AFTER_AWAIT = 'const a = []; for (let i = 0; i < 20; i++) { a.push(new Uint8Array(1e6)); await null; } return a.length;';

describe('engine disposal after runs that grow the heap inside promise jobs', () => {
  let rt: JavascriptRuntime;
  beforeAll(() => {
    rt = createJavascriptRuntime({ workers: 1 });
  });
  afterAll(() => rt.close());

  it('leaves engineResets at 0 over several such runs, script and module form, ending well or not', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await rt.run(request(GROW_AFTER_AWAIT))).output).toBe(20);
      expect((await rt.run(request(`export default async () => { ${GROW_AFTER_AWAIT} };`))).output).toBe(20);
      const e = await failure(rt.run(request('await null; const a = []; for (let i = 0; i < 20; i++) a.push(new Uint8Array(1e6)); throw new Error("after " + a.length);')));
      expect(e.message).toBe('Error: after 20');
    }
    // The output comes before the engine's disposal: one more run makes sure the last disposal was counted.
    expect((await rt.run(request('return 1'))).output).toBe(1);
    expect(rt.stats()).toMatchObject({ engineResets: 0, workerRestarts: 0 });
  });
});

describe('readOutParametersLive (engine.ts)', () => {
  const host = engineHost;
  const job = (code: string) => engineJob(code, { heapLimitBytes: 80 * 1024 * 1024, timeoutMs: 10_000 });

  it('finds the library internals it was written for (quickjs-emscripten 0.32.0)', async () => {
    const mod = await newBoundedQuickJS(heapMaximumFor(64 * 1024 * 1024), compileQuickJS());
    const rt = mod.newRuntime();
    expect(readOutParametersLive(rt)).toBe(true);
    rt.dispose();
  });

  it('a fresh module whose heap grows inside a job disposes its engine cleanly, run after run', async () => {
    const mod = await newBoundedQuickJS(heapMaximumFor(64 * 1024 * 1024), compileQuickJS());
    const start = heapBytes(mod);
    const first = runInEngine(mod, job(GROW_AFTER_AWAIT), host(mod));
    expect(first).toEqual({ outcome: { ok: true, output: '20' }, poisoned: false });
    expect(heapBytes(mod)).toBeGreaterThan(start); // it did grow inside the jobs
    for (let i = 0; i < 3; i++) expect(runInEngine(mod, job(GROW_AFTER_AWAIT), host(mod)).poisoned).toBe(false);
  });
});
