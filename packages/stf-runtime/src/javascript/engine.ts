/**
 * Runs one STF in a fresh QuickJS runtime + context of a (sync) QuickJS WASM module. Used by worker.ts; it is
 * synchronous from start to end: SQL calls block in the host's `sql` callback.
 *
 * The runtime and context can be made ahead of the run (`FreshEngine`, with the prelude compiled in it and nothing
 * else: no user code, no input, no host function), so that making them is off the run's path; each is used by one
 * run only and then disposed, never reused.
 *
 * Every handle is disposed before the runtime is; an exception from the WASM module itself (an abort, a failed
 * assertion, a native stack overflow) marks the module as poisoned so the caller replaces it.
 */
import { randomBytes } from 'node:crypto';
import { constants as zlibConstants, deflateSync } from 'node:zlib';
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import type { LogLine } from '../types.js';
import { type LibraryModule, moduleNotAllowed } from './libraries.js';
import { PRELUDE_FILE, PRELUDE_SOURCE } from './prelude.js';
import { classifyProgram, type ProgramForm } from './program.js';
import type { RunOutcome } from './protocol.js';
import { type ErrorInfo, fixScriptLocations, MODULE_FILE, SCRIPT_FILE, syntaxFailure, wrapScript } from './syntax.js';

/** QuickJS's own stack limit; above about 256 KiB runaway recursion overflows Node's stack and breaks the module. */
export const MAX_STACK_BYTES = 256 * 1024;

const MAX_DETAIL_LINES = 30;
const MAX_DETAIL_CHARS = 8 * 1024;

export interface EngineJob {
  code: string;
  /** JSON of { input, sources, caller, env }. */
  boot: string;
  memoryBytes: number;
  maxOutputBytes: number;
  timeoutMs: number;
  /** Date.now() value after which the guest is interrupted. */
  interruptAt: number;
  /** True once the run was cancelled (its caller went away): the guest is interrupted as at `interruptAt`. */
  cancelled?: () => boolean;
  /**
   * Backstop of the memory limit: the guest is stopped (kind 'memory') when the WASM heap grows beyond this. The
   * QuickJS build counts 8 bytes per allocation (no malloc_usable_size), so setMemoryLimit only refuses single
   * allocations larger than `memoryBytes`, never their sum; the heap size catches the sum. (The heap itself cannot
   * grow much further: see quickjs-module.ts.)
   */
  heapLimitBytes?: number;
}

export interface EngineHost {
  /**
   * Characters the first log line may have (0: no logs); the guest cuts longer lines to it, so a huge line is never
   * copied out of the WASM heap.
   */
  logRoom(): number;
  /** Takes one line (`cut`: it was cut to the room it had) and returns the room of the next (0 once the cap is reached). */
  log(level: LogLine['level'], message: string, cut: boolean): number;
  /** JSON text of the rows or the affected count; throws an Error whose message the guest sees. */
  sql(query: string): string;
  /**
   * A bundled library by the name `resolveModule` gave: ES module source, or bytes (served as a module whose default
   * export is a Uint8Array of them, copied into QuickJS by the host: a font is never decoded in the guest), or
   * undefined when the name is not allowed.
   */
  loadModule(name: string): LibraryModule | undefined;
  /**
   * The module name an import specifier stands for (`@d6e-ai/pdf-lib` → `pdf-lib`, so both forms share one module
   * instance in a run), or undefined when it names no library (the specifier is then kept, and refused on load).
   */
  resolveModule?(name: string): string | undefined;
  /** Current size of the module's WASM memory, when known. */
  heapBytes?(): number;
}

export interface EngineResult {
  outcome: RunOutcome;
  /** The WASM module threw or aborted: it must not be used again. */
  poisoned: boolean;
}

/** Thrown by EngineHost.sql when the run's deadline passed while it waited for the answer. */
export class SqlDeadlineError extends Error {
  constructor() {
    super('interrupted');
    this.name = 'InternalError';
  }
}

type Phase = 'setup' | 'compile' | 'module' | 'run' | 'output';

class GuestThrow {
  constructor(
    readonly handle: QuickJSHandle,
    readonly phase: Phase,
  ) {}
}

class Failure {
  constructor(readonly outcome: RunOutcome) {}
}

/**
 * A new QuickJS runtime and context of `mod` in which only the prelude was evaluated (a function expression: it
 * defines nothing until a run calls it with that run's data). For exactly one run (`runOnEngine`).
 */
export class FreshEngine {
  #used = false;

  private constructor(
    readonly mod: QuickJSWASMModule,
    readonly rt: QuickJSRuntime,
    readonly vm: QuickJSContext,
    readonly prelude: QuickJSHandle,
  ) {}

  /** Throws when the WASM module fails (the caller replaces it). */
  static create(mod: QuickJSWASMModule): FreshEngine {
    const rt = mod.newRuntime();
    let vm: QuickJSContext | undefined;
    try {
      readOutParametersLive(rt);
      rt.setMaxStackSize(MAX_STACK_BYTES);
      vm = rt.newContext();
      const r = vm.evalCode(PRELUDE_SOURCE, PRELUDE_FILE, { type: 'global' });
      if (r.error) {
        r.error.dispose();
        throw new Error('the prelude did not evaluate');
      }
      return new FreshEngine(mod, rt, vm, r.value);
    } catch (e) {
      disposeAll(vm, rt);
      throw e;
    }
  }

  /** Hands the engine to its one run; a second take throws (a used context is never run in again). */
  take(): this {
    if (this.#used) throw new Error('a QuickJS engine runs one STF only');
    this.#used = true;
    return this;
  }

  get used(): boolean {
    return this.#used;
  }

  /** Disposes the prelude, the context and the runtime; false when the module failed doing so. */
  dispose(): boolean {
    this.#used = true;
    let clean = true;
    try {
      if (this.prelude.alive) this.prelude.dispose();
    } catch {
      clean = false;
    }
    return disposeAll(this.vm, this.rt) && clean;
  }
}

/** A run whose result is known, with its engine still to dispose (done after the result is handed on). */
export interface FinishedRun {
  outcome: RunOutcome;
  /** The WASM module threw or aborted during the run: it must not be used again. */
  poisoned: boolean;
  /** Disposes every handle of the run, its context and runtime; false when that poisoned the module. */
  dispose(): boolean;
}

/** Runs one STF in a fresh engine of `mod`, made now, and disposes it. */
export function runInEngine(mod: QuickJSWASMModule, job: EngineJob, host: EngineHost): EngineResult {
  let engine: FreshEngine;
  try {
    engine = FreshEngine.create(mod);
  } catch (e) {
    return { outcome: hostFailure(e), poisoned: true };
  }
  const run = runOnEngine(engine, job, host);
  const clean = run.dispose();
  return { outcome: run.outcome, poisoned: run.poisoned || !clean };
}

/** Runs one STF in `engine` (made ahead by FreshEngine.create, never used before). */
export function runOnEngine(engine: FreshEngine, job: EngineJob, host: EngineHost): FinishedRun {
  const handles: QuickJSHandle[] = [];
  const { rt, vm, prelude } = engine.take();
  let poisoned = false;
  let outcome: RunOutcome;
  try {
    outcome = new Execution(rt, vm, prelude, job, host, handles).run();
  } catch (e) {
    poisoned = true;
    outcome = hostFailure(e);
  }
  return {
    outcome,
    poisoned,
    dispose: () => {
      let clean = true;
      for (let i = handles.length - 1; i >= 0; i--) {
        const h = handles[i]!;
        try {
          if (h.alive) h.dispose();
        } catch {
          clean = false;
        }
      }
      return engine.dispose() && clean;
    },
  };
}

/**
 * Disposes the context, then its runtime. False when either throws: QuickJS aborts on a leaked handle, which
 * poisons the whole WASM module.
 */
export function disposeAll(...things: ({ dispose(): void } | undefined)[]): boolean {
  let clean = true;
  for (const t of things) {
    try {
      t?.dispose();
    } catch {
      clean = false;
    }
  }
  return clean;
}

/** What readOutParametersLive changes: quickjs-emscripten's ModuleMemory (0.32.0), not part of its typed API. */
interface ModuleMemoryInternals {
  module: { HEAPU8: Uint8Array };
  newTypedArray(kind: Int32ArrayConstructor, length: number): { value: { typedArray: Int32Array; ptr: number } };
}

/**
 * Works around a bug of quickjs-emscripten (0.31.0 and 0.32.0, the latest; its issues #269, #235): the runtime's
 * `executePendingJobs` reads which context the last job ran in through an Int32Array made over the WASM memory's
 * buffer *before* the jobs run. A job that grows the memory (a few MB allocated after an `await`) detaches that
 * buffer, the read gives `undefined`, and executePendingJobs takes it for a context it does not know:
 * `newContext({ contextPointer: undefined })` makes a brand-new JSContext that nothing ever frees, and disposing the
 * runtime then aborts the module (`Assertion failed: list_empty(&rt->gc_obj_list)`, JS_FreeRuntime). Here the typed
 * arrays the runtime makes for such out-parameters read through the memory's current buffer instead. Returns false
 * when the library's internals are not the ones this was written for (nothing is changed then; a poisoned module
 * is still replaced by the worker).
 */
export function readOutParametersLive(rt: QuickJSRuntime): boolean {
  const memory = (rt as unknown as { memory?: ModuleMemoryInternals }).memory;
  if (!memory || typeof memory.newTypedArray !== 'function' || !(memory.module?.HEAPU8 instanceof Uint8Array)) return false;
  const made = memory.newTypedArray;
  memory.newTypedArray = function (this: ModuleMemoryInternals, kind, length) {
    const lifetime = made.call(this, kind, length);
    const { ptr } = lifetime.value;
    const module = this.module;
    Object.defineProperty(lifetime.value, 'typedArray', { get: () => new kind(module.HEAPU8.buffer, ptr, length) });
    return lifetime;
  };
  return true;
}

/** Makes the module abort the way a leaked handle does (tests of the recovery path). Returns true when it did. */
export function poisonModule(mod: QuickJSWASMModule): boolean {
  try {
    const rt = mod.newRuntime();
    const vm = rt.newContext();
    vm.newObject(); // deliberately leaked
    vm.dispose();
    rt.dispose(); // Aborted(Assertion failed: list_empty(&rt->gc_obj_list))
    return false;
  } catch {
    return true;
  }
}

function hostFailure(e: unknown): RunOutcome {
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof RangeError && /call stack/i.test(message)) {
    return { ok: false, kind: 'stack', message: 'Stack overflow: the recursion is too deep' };
  }
  return { ok: false, internal: `QuickJS engine failure: ${message}` };
}

class Execution {
  private interrupted = false;
  private heapExceeded = false;
  private readonly form: ProgramForm;

  constructor(
    private readonly rt: QuickJSRuntime,
    private readonly vm: QuickJSContext,
    /** The prelude function, evaluated in `vm` when the engine was made. */
    private readonly prelude: QuickJSHandle,
    private readonly job: EngineJob,
    private readonly host: EngineHost,
    private readonly handles: QuickJSHandle[],
  ) {
    this.form = classifyProgram(job.code);
  }

  run(): RunOutcome {
    const { rt, vm, job } = this;
    rt.setMemoryLimit(job.memoryBytes);
    const heapBytes = this.host.heapBytes;
    const heapLimit = job.heapLimitBytes;
    rt.setInterruptHandler(() => {
      if (heapBytes && heapLimit !== undefined && heapBytes() > heapLimit) {
        this.heapExceeded = true;
        return true;
      }
      if (Date.now() < job.interruptAt && !job.cancelled?.()) return false;
      this.interrupted = true;
      return true;
    });
    rt.setModuleLoader(
      (name) => {
        try {
          // What the host copies into the WASM heap (a module's source, a font's bytes) is counted like any copy.
          return loadGuestModule(vm, this.host, name, (n) => this.room(`import ${name}`, n, n));
        } catch (e) {
          return { error: e instanceof Error ? e : new Error(String(e)) };
        }
      },
      (_base, name) => this.host.resolveModule?.(name) ?? name,
    );
    try {
      const api = this.setup();
      let result: QuickJSHandle;
      if (this.form.kind === 'module') {
        const ns = this.settle(this.unwrap(vm.evalCode(job.code, MODULE_FILE, { type: 'module' }), 'module'), 'module');
        const fn = this.own(vm.getProp(ns, 'default'));
        result = this.settle(this.unwrap(vm.callFunction(api.invoke, vm.undefined, fn), 'run'), 'run');
      } else {
        const fn = this.unwrap(vm.evalCode(wrapScript(this.form), SCRIPT_FILE, { type: 'global' }), 'compile');
        result = this.settle(this.unwrap(vm.callFunction(fn, vm.undefined), 'run'), 'run');
      }
      // The guest may have caught the error of an SQL call that outlived the deadline.
      if (this.interrupted || this.heapExceeded) return this.classify({ message: 'interrupted' }, 'run');
      const serialized = this.unwrap(vm.callFunction(api.serialize, vm.undefined, result), 'output');
      if (vm.typeof(serialized) === 'number') {
        // Longer in characters than the limit in bytes: reported by its length, never copied out.
        return {
          ok: false,
          kind: 'output_too_large',
          message: `The output is at least ${vm.getNumber(serialized)} bytes of JSON; the limit is ${job.maxOutputBytes}`,
        };
      }
      const json = vm.getString(serialized);
      const bytes = Buffer.byteLength(json);
      if (bytes > job.maxOutputBytes) {
        return {
          ok: false,
          kind: 'output_too_large',
          message: `The output is ${bytes} bytes of JSON; the limit is ${job.maxOutputBytes}`,
        };
      }
      return { ok: true, output: json };
    } catch (e) {
      if (e instanceof Failure) return e.outcome;
      if (e instanceof GuestThrow) return this.classify(this.describe(e.handle), e.phase);
      throw e;
    }
  }

  private own<T extends QuickJSHandle>(h: T): T {
    this.handles.push(h);
    return h;
  }

  private unwrap(r: { error?: QuickJSHandle; value?: QuickJSHandle }, phase: Phase): QuickJSHandle {
    if (r.error) throw new GuestThrow(this.own(r.error), phase);
    return this.own(r.value!);
  }

  private setup(): { invoke: QuickJSHandle; serialize: QuickJSHandle } {
    const { vm, host } = this;
    const log = this.own(
      vm.newFunction('hostLog', (level, text, cut) =>
        vm.newNumber(host.log(vm.getString(level) as LogLine['level'], vm.getString(text), vm.dump(cut) === true)),
      ),
    );
    const sql = this.own(
      vm.newFunction('hostSql', (query) => {
        try {
          return vm.newString(host.sql(vm.getString(query)));
        } catch (e) {
          if (e instanceof SqlDeadlineError) this.interrupted = true;
          throw e;
        }
      }),
    );
    const random = this.own(
      vm.newFunction('hostRandom', (n) => {
        const size = Math.max(0, Math.min(65_536, Math.floor(vm.getNumber(n)) || 0));
        return vm.newString(randomBytes(size).toString('hex'));
      }),
    );
    // Native helpers of the bundled libraries (prelude.ts: under Symbol.for('wds.stf.deflate') / ('wds.stf.base64')).
    const deflate = this.own(
      vm.newFunction('hostDeflate', (buffer, length, level) => {
        const bytes = this.guestBytes('deflate', buffer, length);
        const out = deflateSync(bytes, { level: deflateLevel(vm.getNumber(level)) });
        this.room('deflate', out.length, out.length);
        return vm.newArrayBuffer(out as unknown as ArrayBuffer);
      }),
    );
    const base64 = this.own(
      vm.newFunction('hostBase64', (buffer, length) => {
        const bytes = this.guestBytes('base64', buffer, length);
        const chars = 4 * Math.ceil(bytes.length / 3);
        // vm.newString copies the text into the WASM heap (UTF-8, one byte a character here), then QuickJS into its string.
        this.room('base64', chars, 2 * chars + 1);
        return vm.newString(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'));
      }),
    );
    const boot = this.own(vm.newString(this.job.boot));
    const logRoom = this.own(vm.newNumber(host.logRoom()));
    const maxOutput = this.own(vm.newNumber(this.job.maxOutputBytes));
    const api = this.unwrap(
      vm.callFunction(this.prelude, vm.undefined, log, sql, random, deflate, base64, boot, logRoom, maxOutput),
      'setup',
    );
    this.describeFn = this.own(vm.getProp(api, 'describe'));
    return {
      invoke: this.own(vm.getProp(api, 'invoke')),
      serialize: this.own(vm.getProp(api, 'serialize')),
    };
  }

  /**
   * The bytes of the guest's ArrayBuffer `buffer`, `length` of them (the prelude read it with the intrinsic getter),
   * copied out of the QuickJS heap: quickjs-emscripten copies the buffer into the WASM heap (its malloc), the host
   * takes its own copy and frees that one. Refused (a guest error) when larger than the run's memory limit, or when
   * the WASM heap has no room for the copy (`room`).
   */
  private guestBytes(what: string, buffer: QuickJSHandle, length: QuickJSHandle): Uint8Array {
    const { vm } = this;
    const n = vm.getNumber(length);
    if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`${what}: bad arguments`);
    if (n > this.job.memoryBytes) {
      throw new RangeError(`${what}: the data is ${n} bytes, more than the run's memory limit (${this.job.memoryBytes} bytes)`);
    }
    if (n === 0) return new Uint8Array(0); // (quickjs-emscripten may fail to copy nothing: malloc(0))
    this.room(what, n, n);
    const copy = vm.getArrayBuffer(buffer);
    try {
      if (copy.value.length !== n) throw new TypeError(`${what}: bad arguments`);
      return copy.value.slice();
    } finally {
      copy.dispose();
    }
  }

  /**
   * Checks that `bytes` (a result of `size` for the guest, taking `heap` bytes of the WASM heap while it is handed
   * over) fit the run: at most the memory limit, and the heap can take them without passing the backstop
   * (`heapLimitBytes`). What the host allocates in the WASM heap (quickjs-emscripten's malloc) is not counted by
   * QuickJS, so this is where it is counted; and it keeps such a malloc from ever failing (the heap's hard maximum
   * lies beyond the backstop), which quickjs-emscripten does not check: a failed one would write at address 0.
   * Refusing is QuickJS's own "out of memory" (an InternalError: the run fails with kind 'memory' unless caught).
   */
  private room(what: string, size: number, heap: number): void {
    if (size > this.job.memoryBytes) {
      throw new RangeError(`${what}: the result is ${size} bytes, more than the run's memory limit (${this.job.memoryBytes} bytes)`);
    }
    const { heapBytes } = this.host;
    const limit = this.job.heapLimitBytes;
    if (heapBytes && limit !== undefined && heapBytes() + heap > limit) {
      const e = new Error('out of memory');
      e.name = 'InternalError';
      throw e;
    }
  }

  /** Runs pending jobs until the promise settles; returns its value (or the handle itself when not a promise). */
  private settle(h: QuickJSHandle, phase: Phase): QuickJSHandle {
    const { vm, rt } = this;
    for (;;) {
      const state = vm.getPromiseState(h);
      if (state.type === 'fulfilled') return state.notAPromise ? h : this.own(state.value);
      if (state.type === 'rejected') throw new GuestThrow(this.own(state.error), phase);
      const jobs = rt.executePendingJobs();
      if (jobs.error) throw new GuestThrow(this.own(jobs.error), phase);
      if (jobs.value === 0) {
        // Nothing ran, so nothing can settle it. (A state that did settle is read again by the loop: its handle goes.)
        const again = vm.getPromiseState(h);
        if (again.type === 'pending') {
          throw new Failure({
            ok: false,
            kind: 'runtime',
            message: 'The STF awaited a promise that never settles',
          });
        }
        if (again.type === 'rejected') again.error.dispose();
        else if (!again.notAPromise) again.value.dispose();
      }
    }
  }

  /** Reads a thrown value through the prelude's `describe`, with the limits relaxed so it cannot fail on them. */
  private describe(error: QuickJSHandle): ErrorInfo {
    const { rt, vm } = this;
    rt.setMemoryLimit(-1);
    const until = Date.now() + 250;
    rt.setInterruptHandler(() => Date.now() > until);
    const describeFn = this.describeFn;
    if (!describeFn) {
      // The prelude itself failed (for example an input larger than the memory limit): a plain dump will do.
      try {
        const dumped = vm.dump(error) as unknown;
        if (dumped && typeof dumped === 'object' && typeof (dumped as ErrorInfo).message === 'string') {
          return dumped as ErrorInfo;
        }
        return { message: String(dumped) };
      } catch {
        return { message: 'unknown error' };
      }
    }
    const r = vm.callFunction(describeFn, vm.undefined, error);
    if (r.error) {
      r.error.dispose();
      return { message: 'unknown error' };
    }
    try {
      const info = JSON.parse(vm.getString(r.value)) as ErrorInfo;
      return { ...info, message: typeof info.message === 'string' ? info.message : 'unknown error' };
    } catch {
      return { message: 'unknown error' };
    } finally {
      r.value.dispose();
    }
  }

  private describeFn: QuickJSHandle | undefined;

  /** The heap grew past the backstop: whatever failed (an error that could not even be built, say) ran out of memory. */
  private heapFull(): boolean {
    const { heapBytes } = this.host;
    return heapBytes !== undefined && this.job.heapLimitBytes !== undefined && heapBytes() > this.job.heapLimitBytes;
  }

  private timeout(): RunOutcome {
    return { ok: false, kind: 'timeout', message: `The STF ran longer than ${this.job.timeoutMs} ms` };
  }

  private classify(info: ErrorInfo, phase: Phase): RunOutcome {
    const name = info.name;
    const message = info.message;
    if (this.heapExceeded || this.heapFull() || (name === 'InternalError' && message === 'out of memory')) {
      return {
        ok: false,
        kind: 'memory',
        message: `The STF used more memory than its limit (${this.job.memoryBytes} bytes)`,
      };
    }
    if (this.interrupted) return this.timeout();
    const stack = fixScriptLocations(info.stack ?? '', this.form);
    if ((name === 'InternalError' && message === 'stack overflow') || (name === 'RangeError' && /call stack/i.test(message))) {
      return {
        ok: false,
        kind: 'stack',
        message: 'Stack overflow: the recursion is too deep',
        details: clip(stack),
      };
    }
    const title = name ? `${name}: ${message}` : message;
    if (phase === 'output') {
      return { ok: false, kind: 'invalid_output', message: `The output is not JSON-serialisable: ${title}` };
    }
    const syntax = phase === 'compile' || phase === 'module' ? syntaxFailure(info, this.job.code, this.form) : undefined;
    if (syntax) return { ok: false, kind: 'syntax', message: syntax.message, details: syntax.details };
    return { ok: false, kind: 'runtime', message: title, details: stack ? clip(`${title}\n${stack}`) : undefined };
  }
}

/** A zlib level from the guest: an integer 0–9 (or -1, zlib's default, 6); anything else is the default. */
function deflateLevel(level: number): number {
  return Number.isInteger(level) && level >= -1 && level <= 9 ? level : zlibConstants.Z_DEFAULT_COMPRESSION;
}

/** Trims a stack for the STF's author: no prelude frames, runs of one frame collapsed, bounded length. */
function clip(text: string): string {
  let lines: string[] = [];
  let repeated = 0;
  for (const line of text.replace(/\n+$/, '').split('\n')) {
    if (line.includes(PRELUDE_FILE)) continue;
    if (line === lines[lines.length - 1] && line.trimStart().startsWith('at ')) {
      repeated++;
      continue;
    }
    if (repeated) lines.push(`    ... (the frame above repeated ${repeated} more times)`);
    repeated = 0;
    lines.push(line);
  }
  if (repeated) lines.push(`    ... (the frame above repeated ${repeated} more times)`);
  if (lines.length > MAX_DETAIL_LINES) {
    const more = lines.length - MAX_DETAIL_LINES;
    lines = [...lines.slice(0, MAX_DETAIL_LINES), `    ... ${more} more`];
  }
  const out = lines.join('\n');
  return out.length > MAX_DETAIL_CHARS ? `${out.slice(0, MAX_DETAIL_CHARS)}…` : out;
}

/**
 * The module loader's answer for `name` (static imports and dynamic import() alike). Bytes become a one-line module
 * whose default export is a Uint8Array over an ArrayBuffer the host made (one copy into the heap): the module takes
 * it from a hidden global with a random name and deletes that at once, so the guest's globals stay as they were.
 * `reserve` refuses (throws) when the WASM heap has no room for the copy.
 */
function loadGuestModule(
  vm: QuickJSContext,
  host: EngineHost,
  name: string,
  reserve: (bytes: number) => void,
): string | { error: Error } {
  const module = host.loadModule(name);
  if (module === undefined) return { error: moduleNotAllowed(name) };
  if (typeof module === 'string') {
    reserve(module.length * 2);
    return module;
  }
  reserve(module.bytes.byteLength);
  const key = `__stf_bytes_${randomBytes(8).toString('hex')}`;
  const buffer = vm.newArrayBuffer(module.bytes);
  try {
    vm.defineProp(vm.global, key, { value: buffer, configurable: true, enumerable: false });
  } finally {
    buffer.dispose();
  }
  const k = JSON.stringify(key);
  return `const bytes = new Uint8Array(globalThis[${k}]);\ndelete globalThis[${k}];\nexport default bytes;\n`;
}
