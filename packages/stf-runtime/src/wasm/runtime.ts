import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import type { ResourceLimits, Worker } from 'node:worker_threads';
import type { CallContext, ExtismPluginOptions, Plugin } from '@extism/extism';
import { FairQueue, type FairQueueStats } from '../fair-queue.js';
import { StfError, StfRunCancelled, type LogLine, type StfRunRequest, type StfRunResult, type StfRuntime } from '../types.js';
import { WASM_PAGE_BYTES, type WasmModuleDetails } from './inspect.js';
import { createMasker, LogCollector } from './logs.js';
import { WORKER_EXEC_ARGV, workerFailureMessage } from './preload.js';
import { type CompiledWasmModule, wasmApi } from './wasm-api.js';
import { checkWasmModule, EXTISM_USER, readValidWasmModule, WASI_MODULE } from './validate.js';

/**
 * The wasm STF runtime (docs/stfs.md#the-wasm-runtime): an Extism plugin exporting `run`, run in a worker thread by
 * @extism/extism 2.0.0-rc13 (`runInWorker: true`, which is what makes the wall-clock timeout and async host
 * functions work). One plugin (one worker) per run, closed after it.
 *
 * The plugin's input is this JSON document (the one a docker STF gets on stdin, without the API credentials):
 *
 *   { "workspace_id": <id | null>, "stf_id": <id | null>, "caller": <user id | null>, "input": <any>,
 *     "sources": { <name>: <any>, … }, "env": { <SECRET_KEY>: "<value>", … } }
 *
 * `workspace_id` and `stf_id` are the request's (null when not given); `env` holds the STF's secrets.
 * The plugin's output (`output_set`) must be one JSON document: it is the run's output.
 *
 * Host function `sql` in namespace `extism:host/user`, signature (i64 query) -> i64 answer, both Extism memory
 * offsets: the query is UTF-8 text; the answer is JSON, `{"rows":[…]}` for a SELECT, `{"affected_rows":n}` otherwise,
 * or `{"error":"<message>"}` when the query fails or SQL is not available.
 *
 * Limits: `timeoutMs` bounds the instantiation and, separately, the `run` call (the worker is terminated);
 * the module's own memory is bounded by its declared maximum (checked against `memoryBytes`), and the Extism
 * kernel memory (input, output, `alloc` blocks) is capped at `memoryBytes` too; what else a module may declare
 * (tables, globals, functions, …) is bounded by WASM_MODULE_BOUNDS before the engine sees it, and the worker's
 * V8 heap has `resourceLimits` (workerResourceLimits): a worker that reaches them dies, its run fails with
 * `memory`, and the next run gets a new worker as always; output is capped at `maxOutputBytes`
 * and logs (Extism `log_*`, secrets masked) at `maxLogBytes`. HTTP (`http_request`) is denied unless
 * `allowedHosts` lists the host, and then goes through `fetch` — the service's passes every request through its
 * outbound guard (private addresses refused, the checked address pinned for the connection, no redirects). WASI
 * is enabled only for modules that import `wasi_snapshot_preview1` (no preopened directories; stdout/stderr
 * discarded).
 *
 * At most `concurrency` plugins run at once; the others wait in a per-workspace fair queue (fair-queue.ts), and
 * the wait counts against `timeoutMs`.
 */

export interface WasmRuntimeOptions {
  /** Hosts a plugin may reach with Extism's `http_request` (`*.example.com` wildcards allowed). None by default. */
  allowedHosts?: string[];
  /**
   * The HTTP client of `http_request`, called only for allowed hosts (with the run's abort signal in `init`). The
   * service passes one that goes through its outbound guard; the default, the global fetch without following
   * redirects, checks no addresses and is for tests and tools only.
   */
  fetch?: typeof fetch;
  /** Plugins running at once (default 4); more wait their turn within their time limit. */
  concurrency?: number;
  /** Runs one workspace may have waiting; one more is refused with StfRuntimeBusy (default 16). */
  maxQueuedPerWorkspace?: number;
  /** Runs one workspace may have in progress even when nobody else waits (default: `concurrency`). */
  maxRunningPerWorkspace?: number;
  /** How many compiled modules to keep, by SHA-256 of their bytes (default 32; 0 disables the cache). */
  moduleCacheSize?: number;
  /**
   * Bytes of module code the cache may hold (default 32 MiB): a compiled module keeps its bytes and the machine
   * code of every function it ran, several times its size.
   */
  moduleCacheBytes?: number;
  /** The old-generation limit of each plugin worker's V8 heap, in MiB (default: workerResourceLimits). For tests. */
  workerHeapMb?: number;
}

const MiB = 1024 * 1024;

/**
 * The V8 limits of a plugin worker. The old generation holds the SDK's own objects (about 10 MiB), the module's
 * tables (at most 16 bytes an entry there, WASM_MODULE_BOUNDS) and, for a moment, one kernel block decoded to a
 * string (a log line: up to `memoryBytes` bytes, two bytes a character): a guest cannot grow it further, so
 * reaching the limit means something unforeseen grew, and the run ends with `memory`. No single allocation of a
 * guest may be larger than 16 MiB past the limit: Node lets a worker's heap overshoot by that much to terminate it
 * cleanly, and a larger one aborts the whole process (which is why tables are bounded, not left to this limit).
 */
export function workerResourceLimits(memoryBytes: number, heapMb?: number): ResourceLimits {
  return {
    maxOldGenerationSizeMb: heapMb ?? Math.ceil((2 * memoryBytes) / MiB) + 64,
    maxYoungGenerationSizeMb: 16,
    codeRangeSizeMb: 16,
    stackSizeMb: 4,
  };
}

/**
 * The plugin workers of a run. The SDK creates its workers itself (and may create another one after a time out),
 * so they are caught when created ('worker_threads' channel, published in the Worker constructor) and matched
 * to the run whose async context created them: an error listener is attached before the worker can die, since
 * an 'error' nobody listens to (a worker out of memory) would crash the host process.
 */
interface PluginWorkers {
  adopt(worker: Worker): void;
}
const pluginRun = new AsyncLocalStorage<PluginWorkers>();
let watchingWorkers = false;
function watchPluginWorkers(): void {
  if (watchingWorkers) return;
  watchingWorkers = true;
  subscribe('worker_threads', (message) => {
    const worker = (message as { worker?: Worker }).worker;
    if (worker) pluginRun.getStore()?.adopt(worker);
  });
}
const OUT_OF_MEMORY = 'ERR_WORKER_OUT_OF_MEMORY';

export interface WasmRuntimeStats {
  runs: number;
  activeRuns: number;
  cacheHits: number;
  cacheMisses: number;
  cachedModules: number;
  /** Runs holding a plugin slot and waiting for one, per workspace. */
  queue: FairQueueStats;
}

export interface WasmRuntime extends StfRuntime {
  stats(): WasmRuntimeStats;
}

interface CompiledModule {
  module: CompiledWasmModule;
  details: WasmModuleDetails;
}

type Extism = typeof import('@extism/extism');

// The SDK is loaded on first use: importing it loads node:wasi, which prints an ExperimentalWarning.
let extismPromise: Promise<Extism> | undefined;
function loadExtism(): Promise<Extism> {
  extismPromise ??= import('@extism/extism');
  return extismPromise;
}

const MAX_TIMER_MS = 2 ** 31 - 1;
const TIMED_OUT = 'EXTISM: call canceled due to timeout';
const INSTANTIATE_TIMED_OUT = 'EXTISM: timed out while waiting for plugin to instantiate';
const PLUGIN_ERROR_PREFIX = 'Plugin-originated error: ';
const MEMORY_EXCEEDED = /^memory limit exceeded: /;

/** `AbortController.abort` reasons. */
const DEADLINE = 'deadline';
const CLOSING = 'closing';
/** The run's own signal aborted (StfRunRequest.signal): its plugin's worker is terminated. */
const CANCELLED = 'cancelled';

class WorkerExited extends Error {
  constructor() {
    super('the plugin worker exited');
  }
}

class RunAborted extends Error {
  constructor() {
    super('the run reached its time limit');
  }
}

function errorMessage(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err && typeof err.message === 'string') return err.message;
  return String(err);
}

function clip(text: string, max = 4000): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export function createWasmRuntime(opts: WasmRuntimeOptions = {}): WasmRuntime {
  const allowedHosts = [...(opts.allowedHosts ?? [])];
  const httpClient: typeof fetch = opts.fetch ?? ((input, init) => fetch(input, { ...init, redirect: 'manual' }));
  const queue = new FairQueue({
    capacity: Math.max(1, Math.floor(opts.concurrency ?? 4)),
    maxQueuedPerWorkspace: opts.maxQueuedPerWorkspace ?? 16,
    maxRunningPerWorkspace: opts.maxRunningPerWorkspace,
    slotName: 'wasm plugin slots',
  });
  const cacheSize = Math.max(0, opts.moduleCacheSize ?? 32);
  const cacheBytes = Math.max(0, opts.moduleCacheBytes ?? 32 * MiB);
  /** Insertion order = least recently used first. */
  const cache = new Map<string, { bytes: number; module: Promise<CompiledModule> }>();
  let cachedBytes = 0;
  const evict = (key: string) => {
    const entry = cache.get(key);
    if (!entry) return;
    cache.delete(key);
    cachedBytes -= entry.bytes;
  };
  watchPluginWorkers();
  /** Runs in progress, so that `close` can cut their host calls short and wait for them. */
  const active = new Map<Promise<unknown>, AbortController>();
  const counters = { runs: 0, cacheHits: 0, cacheMisses: 0 };
  let closed = false;

  async function compile(bytes: Uint8Array): Promise<CompiledModule> {
    const details = readValidWasmModule(bytes);
    const module = await wasmApi.compile(bytes);
    return { module, details };
  }

  async function load(bytes: Uint8Array): Promise<CompiledModule> {
    if (cacheSize === 0 || bytes.length > cacheBytes) {
      counters.cacheMisses++;
      return compile(bytes);
    }
    const key = createHash('sha256').update(bytes).digest('hex');
    const hit = cache.get(key);
    if (hit) {
      counters.cacheHits++;
      cache.delete(key);
      cache.set(key, hit);
      return hit.module;
    }
    counters.cacheMisses++;
    const pending = compile(bytes);
    const entry = { bytes: bytes.length, module: pending };
    cache.set(key, entry);
    cachedBytes += entry.bytes;
    pending.catch(() => {
      if (cache.get(key) === entry) evict(key);
    });
    while (cache.size > cacheSize || cachedBytes > cacheBytes) evict(cache.keys().next().value!);
    return pending;
  }

  function run(req: StfRunRequest): Promise<StfRunResult> {
    if (closed) return Promise.reject(new Error('the wasm runtime is closed'));
    if (req.signal?.aborted) return Promise.reject(new StfRunCancelled());
    const abort = new AbortController();
    const onCancel = () => abort.abort(CANCELLED);
    req.signal?.addEventListener('abort', onCancel, { once: true });
    const done = runOnce(req, abort);
    active.set(done, abort);
    const forget = () => {
      active.delete(done);
      req.signal?.removeEventListener('abort', onCancel);
    };
    done.then(forget, forget);
    return done;
  }

  async function runOnce(req: StfRunRequest, abort: AbortController): Promise<StfRunResult> {
    const asked = performance.now();
    const limitMs = Math.max(1, Math.min(Math.floor(req.limits.timeoutMs), MAX_TIMER_MS));
    const grant = await queue.acquire(req.workspaceId, limitMs, req.principalId, req.signal);
    const waitedTooLong = () =>
      new StfError(
        'timeout',
        `The STF ran longer than ${req.limits.timeoutMs} ms`,
        `it spent its whole time limit waiting for one of the ${queue.capacity} wasm plugin slots and did not run`,
      );
    if (!grant) throw waitedTooLong();
    try {
      // What is left of the time limit after the wait.
      const timeoutMs = Math.floor(limitMs - (performance.now() - asked));
      if (timeoutMs < 1) throw waitedTooLong();
      if (abort.signal.reason === CANCELLED) throw new StfRunCancelled();
      if (abort.signal.aborted) throw new Error('the wasm runtime was closed during the run');
      return await runPlugin(req, abort, timeoutMs);
    } finally {
      grant.release();
    }
  }

  async function runPlugin(req: StfRunRequest, abort: AbortController, timeoutMs: number): Promise<StfRunResult> {
    const started = performance.now();
    counters.runs++;
    const { limits } = req;
    const mask = createMasker(Object.values(req.secrets ?? {}));
    const collector = new LogCollector(limits.maxLogBytes, mask);
    const fail = (kind: StfError['kind'], message: string, details?: string): StfError =>
      new StfError(kind, mask(message), details === undefined ? undefined : mask(clip(details)), collector.close());

    if (typeof req.code === 'string') throw fail('invalid_module', 'The code of a wasm STF must be the module bytes');
    const compiled = await load(req.code);
    checkWasmModule(compiled.details, limits);

    const timedOut = () => fail('timeout', `The STF ran longer than ${limits.timeoutMs} ms`, 'limit: timeoutMs');
    const aborted = new Promise<never>((_, reject) => {
      abort.signal.addEventListener('abort', () => reject(new RunAborted()), { once: true });
    });
    aborted.catch(() => undefined);
    let memoryExceeded = false;
    let workerError: unknown;
    let outOfHeap = false;
    const resourceLimits = workerResourceLimits(limits.memoryBytes, opts.workerHeapMb);
    // Every worker the SDK starts for this run (normally one; another after a time out), and whether the run ended.
    const adopted = new Set<Worker>();
    let ended = false;
    let plugin: Plugin | undefined;
    let workerDied!: (err: unknown) => void;
    const died = new Promise<never>((_, reject) => {
      workerDied = reject;
    });
    died.catch(() => undefined);
    const workers: PluginWorkers = {
      adopt(worker) {
        adopted.add(worker);
        // The SDK never settles what waited for a worker that died (Node removes the worker's message listeners
        // before 'error'), so the run stops waiting on `died` instead.
        worker.on('error', (e) => {
          workerError ??= e;
          if ((e as { code?: unknown }).code === OUT_OF_MEMORY) outOfHeap = true;
          workerDied(e);
        });
        // A worker terminated at the time limit may stop only long after it (see WASM_MODULE_BOUNDS.tableEntries),
        // and then the SDK, which gave up waiting for it, never settles the call. Deferred, so that a failure the
        // worker reported before it exited is what the run reports.
        worker.on('exit', () => setImmediate(() => workerDied(new WorkerExited())));
        // A worker the SDK starts after the run ended (its time out of a call nobody waits for) has no use.
        if (ended) queueMicrotask(() => void worker.terminate());
      },
    };
    const endRun = () => {
      ended = true;
      for (const w of adopted) void w.terminate();
    };
    // Cancelled: the plugin's worker is terminated now (the SDK's own way of stopping a call, at its timeout), which
    // ends whatever waits for it (`died`); the run then rejects with StfRunCancelled and its slot is freed.
    const cancelled = () => abort.signal.reason === CANCELLED;
    abort.signal.addEventListener('abort', () => cancelled() && endRun(), { once: true });
    if (cancelled()) throw new StfRunCancelled();
    const heapExceeded = () =>
      fail(
        'memory',
        `The STF used more memory than its limit (${limits.memoryBytes} bytes)`,
        `the plugin's worker reached its V8 heap limit (${resourceLimits.maxOldGenerationSizeMb} MiB)`,
      );

    const log = (level: LogLine['level']) => (message: unknown) => {
      const text = typeof message === 'string' ? message : String(message);
      if (MEMORY_EXCEEDED.test(text)) memoryExceeded = true;
      collector.push(level, text);
    };
    const logger = {
      trace: log('debug'),
      debug: log('debug'),
      info: log('info'),
      log: log('log'),
      warn: log('warn'),
      error: log('error'),
    };

    // Any host function still awaiting something when the run hits its time limit must fail at once: the SDK
    // (rc13) would otherwise keep polling for the terminated worker forever (a 0 ms interval per stale call).
    const sql = async (ctx: CallContext, offset: bigint): Promise<bigint> => {
      if (abort.signal.aborted) throw new RunAborted();
      const query = ctx.read(offset)?.text();
      let answer: string;
      try {
        if (query === undefined) throw new Error('sql: the argument is not an Extism memory offset');
        const run = req.sql;
        if (!run) throw new Error('sql is not available here');
        // Outside the run's context: nothing the callback starts is one of the plugin's workers.
        const result = await Promise.race([pluginRun.exit(() => run(query)), aborted]);
        if (Array.isArray(result)) answer = JSON.stringify({ rows: result });
        else if (typeof result === 'number') answer = JSON.stringify({ affected_rows: result });
        else throw new Error('the sql callback returned neither rows nor a count');
      } catch (err) {
        if (err instanceof RunAborted || abort.signal.aborted) throw new RunAborted();
        answer = JSON.stringify({ error: errorMessage(err) });
      }
      if (abort.signal.aborted) throw new RunAborted();
      return ctx.store(answer);
    };
    const abortableFetch: typeof fetch = (input, init) =>
      pluginRun.exit(() => httpClient(input, { ...init, signal: abort.signal }));

    const maxPages = Math.max(1, Math.ceil(limits.memoryBytes / WASM_PAGE_BYTES));
    const options: ExtismPluginOptions = {
      runInWorker: true,
      timeoutMs,
      useWasi: compiled.details.imports.some((i) => i.module === WASI_MODULE),
      enableWasiOutput: false,
      allowedHosts,
      allowedPaths: {},
      config: {},
      functions: { [EXTISM_USER]: { sql } },
      fetch: abortableFetch,
      logger: logger as unknown as Console,
      logLevel: 'trace',
      memory: { maxPages, maxVarBytes: limits.memoryBytes, maxHttpResponseBytes: limits.memoryBytes },
      nodeWorkerArgs: { name: 'stf wasm plugin', execArgv: [...WORKER_EXEC_ARGV], resourceLimits },
    };

    // The document described at the top of this file.
    const input = JSON.stringify({
      workspace_id: req.workspaceId ?? null,
      stf_id: req.stfId ?? null,
      caller: req.caller ?? null,
      input: req.input ?? null,
      sources: req.sources ?? {},
      env: req.secrets ?? {},
    });
    const { createPlugin } = await loadExtism();
    try {
      const starting = pluginRun.run(workers, () => createPlugin({ wasm: [{ module: compiled.module }] }, options));
      starting.catch(() => undefined);
      plugin = await Promise.race([starting, died]);
    } catch (err) {
      endRun();
      if (cancelled()) throw new StfRunCancelled();
      if (outOfHeap) throw heapExceeded();
      if (workerError !== undefined) throw fail('runtime', `The plugin's worker failed: ${errorMessage(workerError)}`);
      const failure = workerFailureMessage(err);
      if (failure !== undefined) throw fail('runtime', `The module failed to start: ${failure}`);
      if (errorMessage(err) === INSTANTIATE_TIMED_OUT || err instanceof WorkerExited) throw timedOut();
      throw err;
    }
    if (abort.signal.reason === CLOSING || cancelled()) {
      await plugin.close().catch(() => undefined);
      endRun();
      if (cancelled()) throw new StfRunCancelled();
      throw new Error('the wasm runtime was closed during the run');
    }

    // Armed with the same delay just before the SDK arms its own timer, so it fires first.
    const deadline = setTimeout(() => abort.abort(DEADLINE), timeoutMs);
    let bytes: Uint8Array | undefined;
    try {
      const started = plugin;
      const calling = pluginRun.run(workers, () => started.call('run', input));
      calling.catch(() => undefined);
      const out = await Promise.race([calling, died]);
      bytes = out?.bytes();
    } catch (err) {
      const message = errorMessage(err);
      // After the deadline, whatever failed (the SDK's timeout, a host call or fetch cut short) is the timeout.
      if (abort.signal.reason === CLOSING) throw new Error('the wasm runtime was closed during the run');
      if (cancelled()) throw new StfRunCancelled();
      if (outOfHeap) throw heapExceeded();
      if (abort.signal.aborted || err instanceof RunAborted || message === TIMED_OUT) {
        if (workerError !== undefined) throw fail('runtime', `The plugin's worker failed: ${errorMessage(workerError)}`);
        throw timedOut();
      }
      if (memoryExceeded) {
        throw fail('memory', `The STF used more memory than its limit (${limits.memoryBytes} bytes)`, message);
      }
      if (message.startsWith(PLUGIN_ERROR_PREFIX)) throw fail('runtime', message.slice(PLUGIN_ERROR_PREFIX.length));
      const stack = (err as { originalStack?: unknown }).originalStack;
      const details = typeof stack === 'string' ? stack : undefined;
      if (/call stack/i.test(message)) throw fail('stack', `Stack overflow: ${message}`, details);
      throw fail('runtime', `The plugin failed: ${message}`, details);
    } finally {
      clearTimeout(deadline);
      await plugin.close().catch(() => undefined);
      endRun();
    }

    if (bytes === undefined) {
      throw fail('invalid_output', 'The plugin set no output; `run` must output one JSON document (output_set)');
    }
    if (bytes.byteLength > limits.maxOutputBytes) {
      throw fail('output_too_large', `The output is ${bytes.byteLength} bytes; the limit is ${limits.maxOutputBytes}`);
    }
    let output: unknown;
    try {
      output = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    } catch (err) {
      throw fail('invalid_output', `The output is not JSON: ${errorMessage(err)}`);
    }
    const duration_ms = Math.round((performance.now() - started) * 1000) / 1000;
    return { output, logs: collector.close(), duration_ms };
  }

  return {
    run,
    stats: () => ({ ...counters, activeRuns: active.size, cachedModules: cache.size, queue: queue.stats() }),
    /**
     * Refuses new runs, cuts the host calls of runs in progress short and waits for them to end (a plugin busy in
     * its own code is stopped by its time limit). Closing a plugin under a pending call would make the SDK respawn
     * a worker and leak it.
     */
    async close() {
      closed = true;
      queue.close(new Error('the wasm runtime is closed'));
      for (const abort of active.values()) abort.abort(CLOSING);
      await Promise.allSettled([...active.keys()]);
      cache.clear();
      cachedBytes = 0;
    },
  };
}
