/**
 * Host memory outside a wasm module's linear memory (issue 28): what an engine allocates for tables, globals,
 * element segments, functions and kernel blocks is bounded, so four bombs at once of every shape that passes
 * validation leave this process's resident memory under the bound of docs/stfs.md, and a plugin worker that
 * reaches its V8 heap limit ends only its own run, with `memory`.
 *
 * The bound is a size, not a time: per plugin slot the linear memory and the Extism kernel blocks (each at most
 * the 64 MiB limit), the worker's V8 heap (its resourceLimits), what tables cost outside it (12 bytes an entry,
 * 10,000 entries) and 16 MiB for the worker itself; plus 200 MiB for the compiled code and the allocator's
 * slack. Before the fix one run of five `(table 10000000 funcref)` took the process from 59 MiB to 1.4 GiB, two
 * at once to 2.6 GiB.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, StfError, type StfRunRequest } from '../src/types.js';
import { createWasmRuntime, validateWasmModule, type WasmRuntime } from '../src/wasm/index.js';
import { workerResourceLimits } from '../src/wasm/runtime.js';
import { WASM_MODULE_BOUNDS } from '../src/wasm/validate.js';
import { fixture } from './fixtures/wasm/build.js';
import {
  declarationsAtBound,
  elementsAtBound,
  globalsAtBound,
  growToBound,
  hotFunctionAtBound,
  logBomb,
  memoryAtBound,
  REFUSED,
  tablesAtBound,
} from './fixtures/wasm/bombs.js';

const MiB = 1024 * 1024;
const SLOTS = 4;
const LIMIT = DEFAULT_LIMITS.memoryBytes;
const heap = workerResourceLimits(LIMIT);
const PER_SLOT =
  2 * LIMIT +
  (heap.maxOldGenerationSizeMb! + heap.maxYoungGenerationSizeMb!) * MiB +
  12 * WASM_MODULE_BOUNDS.tableEntries +
  16 * MiB;
const BOUND = SLOTS * PER_SLOT + 200 * MiB;

function request(code: Uint8Array, workspaceId: string, timeoutMs = 3000): StfRunRequest {
  return { code, workspaceId, input: null, sources: {}, caller: null, secrets: {}, limits: { ...DEFAULT_LIMITS, timeoutMs } };
}

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof StfError) return e.kind;
    throw e;
  }
}

describe('wasm modules: what costs host memory outside linear memory is refused at validation', () => {
  it.each(Object.entries(REFUSED))('%s', (_name, { bytes, message }) => {
    const code = bytes();
    const before = process.memoryUsage().rss;
    let err: unknown;
    try {
      validateWasmModule(code, DEFAULT_LIMITS);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StfError);
    expect((err as StfError).kind).toBe('invalid_module');
    expect((err as StfError).message).toMatch(message);
    // Refused by reading the module, before the engine allocates for it (a million globals: +2.4 GB in V8).
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * MiB);
  });

  it('a run of a refused module fails with invalid_module before any worker starts', async () => {
    const rt = createWasmRuntime();
    try {
      for (const { bytes } of Object.values(REFUSED).slice(0, 5)) {
        expect(await outcome(rt.run(request(bytes(), 'w')))).toBe('invalid_module');
      }
      // Refused before the engine compiled anything.
      expect(rt.stats().cachedModules).toBe(0);
    } finally {
      await rt.close();
    }
  });

  it('accepts modules at every bound', () => {
    for (const code of [tablesAtBound(), growToBound(), elementsAtBound(), globalsAtBound(), declarationsAtBound(), hotFunctionAtBound(1)]) {
      expect(() => validateWasmModule(code, DEFAULT_LIMITS)).not.toThrow();
    }
  });
});

describe('wasm runtime: bombs at the bounds do not grow the host', { timeout: 240_000 }, () => {
  let rt: WasmRuntime;
  let baseline = 0;
  let peak = 0;
  let sampler: NodeJS.Timeout;
  const peaks: string[] = [];

  beforeAll(async () => {
    rt = createWasmRuntime({ concurrency: SLOTS, maxRunningPerWorkspace: SLOTS });
    await Promise.all(Array.from({ length: SLOTS }, (_, i) => rt.run(request(fixture('echo'), `warm-${i}`))));
    baseline = process.memoryUsage().rss;
    peak = baseline;
    // Sampling only records the highest value seen; nothing is timed.
    sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
  });

  afterAll(async () => {
    clearInterval(sampler);
    await rt.close();
    console.log(
      `wasm memory bombs: rss baseline ${Math.round(baseline / MiB)} MiB, peak ${Math.round(peak / MiB)} MiB ` +
        `(+${Math.round((peak - baseline) / MiB)} MiB; bound +${Math.round(BOUND / MiB)} MiB)\n${peaks.join('\n')}`,
    );
  });

  /** Each shape: the modules of the four runs (distinct where compiling is the cost) and the outcome expected. */
  const SHAPES: [string, (i: number) => Uint8Array, string[]][] = [
    ['tables at their maximum (10,000 entries)', () => tablesAtBound(), ['invalid_output']],
    ['table.grow to the maximum', () => growToBound(), ['timeout']],
    ['element segments built by table.init', () => elementsAtBound(), ['timeout']],
    ['globals and exports', () => globalsAtBound(), ['timeout']],
    ['functions and exception tags', () => declarationsAtBound(), ['timeout']],
    ['a hot function of nearly 1 MiB, four distinct modules', (i) => hotFunctionAtBound(i + 1), ['timeout']],
    ['linear memory and kernel blocks at the limit', () => memoryAtBound(LIMIT / 65536), ['timeout', 'memory']],
    ['kernel blocks of the limit logged again and again', () => logBomb(LIMIT), ['timeout', 'memory']],
  ];

  it.each(SHAPES)('%s: four at once, then a normal run works', async (name, code, kinds) => {
    const before = peak;
    const runs = Array.from({ length: SLOTS }, (_, i) => outcome(rt.run(request(code(i), `bomb-${i}`))));
    for (const kind of await Promise.all(runs)) expect(kinds).toContain(kind);
    expect((await rt.run(request(fixture('echo'), 'after'))).output).toBeTruthy();
    peaks.push(`  ${name}: peak so far +${Math.round((peak - baseline) / MiB)} MiB (was +${Math.round((before - baseline) / MiB)})`);
    expect(process.memoryUsage().rss - baseline).toBeLessThan(BOUND);
  });

  it('the process grew by less than the bound over all of the above', () => {
    expect(peak - baseline).toBeLessThan(BOUND);
  });
});

describe('wasm runtime: a worker past its V8 heap limit', { timeout: 120_000 }, () => {
  it('ends its run with memory; the process, other runtimes and the slots carry on', async () => {
    // Within the bounds nothing a guest does reaches the default limit; 4 MiB is less than the SDK needs to start.
    const starved = createWasmRuntime({ concurrency: 4, maxRunningPerWorkspace: 2, workerHeapMb: 4 });
    const normal = createWasmRuntime();
    try {
      const bombs = ['tenant-a', 'tenant-a', 'tenant-b'].map((ws) => starved.run(request(fixture('echo'), ws, 60_000)).catch((e) => e));
      const others = Array.from({ length: 2 }, (_, i) => normal.run(request(fixture('echo'), `tenant-${i}`, 60_000)));
      for (const r of await Promise.all(others)) expect(r.output).toBeTruthy();
      for (const e of await Promise.all(bombs)) {
        expect(e).toBeInstanceOf(StfError);
        expect([e.kind, e.message]).toEqual(['memory', `The STF used more memory than its limit (${LIMIT} bytes)`]);
        expect(e.details).toBe("the plugin's worker reached its V8 heap limit (4 MiB)");
      }
      // Every slot is free again: the next runs get workers of their own (and fail the same way).
      expect(starved.stats().activeRuns).toBe(0);
      expect(await outcome(starved.run(request(fixture('echo'), 'tenant-a')))).toBe('memory');
      expect((await normal.run(request(fixture('echo'), 'tenant-a'))).output).toBeTruthy();
    } finally {
      await Promise.all([starved.close(), normal.close()]);
    }
  });
});
