/**
 * The save-time check of JavaScript STF code: compiles it — without running it — the way a run does (same form
 * detection, same script wrapper, same stack and memory limits) in a fresh QuickJS runtime, and reports a failure
 * the way a run would. Runs in compile-worker.ts; syntax-check.ts is the main thread's side.
 *
 * Imports are parsed but never resolved: every imported name is served as an empty module, so a module that
 * imports a bundled library (or anything else) passes as long as its syntax is right.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import type { StfFailureKind } from '../types.js';
import { disposeAll, MAX_STACK_BYTES } from './engine.js';
import { classifyProgram, type ProgramForm } from './program.js';
import { type ErrorInfo, MODULE_FILE, SCRIPT_FILE, syntaxFailure, wrapScript } from './syntax.js';

export interface CompileJob {
  code: string;
  /** The memory limit of a run: compiling must fit in it too. */
  memoryBytes: number;
  /** Date.now() value after which QuickJS is interrupted (the main thread also stops the worker at its deadline). */
  interruptAt: number;
}

export type CompileOutcome =
  | { ok: true }
  | { ok: false; kind: StfFailureKind; message: string; details?: string; line?: number; column?: number }
  /** A failure of the engine itself, not of the user's code. */
  | { ok: false; internal: string };

export interface CompileResult {
  outcome: CompileOutcome;
  /** The WASM module threw or aborted: it must not be used again. */
  poisoned: boolean;
}

/** Messages between the main thread (syntax-check.ts) and the compile worker (compile-worker.ts). */
export type ToCompileWorker = { id: number } & CompileJob;
export type FromCompileWorker =
  | { type: 'ready' }
  | { type: 'fatal'; message: string }
  | { type: 'result'; id: number; outcome: CompileOutcome };

const PROPS = ['name', 'message', 'stack', 'fileName', 'lineNumber'] as const;

export function compileInEngine(mod: QuickJSWASMModule, job: CompileJob): CompileResult {
  let rt: QuickJSRuntime | undefined;
  let vm: QuickJSContext | undefined;
  let poisoned = false;
  let outcome: CompileOutcome;
  try {
    rt = mod.newRuntime();
    rt.setMaxStackSize(MAX_STACK_BYTES);
    rt.setMemoryLimit(job.memoryBytes);
    let interrupted = false;
    rt.setInterruptHandler(() => {
      if (Date.now() < job.interruptAt) return false;
      interrupted = true;
      return true;
    });
    rt.setModuleLoader(() => '');
    vm = rt.newContext();
    const form = classifyProgram(job.code);
    const r =
      form.kind === 'module'
        ? vm.evalCode(job.code, MODULE_FILE, { type: 'module', compileOnly: true })
        : vm.evalCode(wrapScript(form), SCRIPT_FILE, { type: 'global', compileOnly: true });
    if (r.error) {
      const info = describe(rt, vm, r.error);
      outcome = classify(info, job, form, interrupted);
    } else {
      r.value.dispose();
      outcome = { ok: true };
    }
  } catch (e) {
    poisoned = true;
    const message = e instanceof Error ? e.message : String(e);
    outcome =
      e instanceof RangeError && /call stack/i.test(message)
        ? { ok: false, kind: 'stack', message: NESTED_TOO_DEEPLY }
        : { ok: false, internal: `QuickJS engine failure: ${message}` };
  } finally {
    if (!disposeAll(vm, rt)) poisoned = true;
  }
  return { outcome, poisoned };
}

const NESTED_TOO_DEEPLY = 'Stack overflow while compiling: the code is nested too deeply';

function classify(info: ErrorInfo, job: CompileJob, form: ProgramForm, interrupted: boolean): CompileOutcome {
  const { name, message } = info;
  if (name === 'InternalError' && message === 'out of memory') {
    return {
      ok: false,
      kind: 'memory',
      message: `Compiling the code needs more memory than the STF's limit (${job.memoryBytes} bytes)`,
    };
  }
  if (interrupted) return { ok: false, kind: 'timeout', message: 'Compiling the code took longer than the time limit' };
  if ((name === 'InternalError' && message === 'stack overflow') || (name === 'RangeError' && /call stack/i.test(message))) {
    return { ok: false, kind: 'stack', message: NESTED_TOO_DEEPLY };
  }
  const syntax = syntaxFailure(info, job.code, form);
  if (syntax) return { ok: false, kind: 'syntax', ...syntax };
  // A SyntaxError without a position in the user's code (QuickJS reports a few early errors that way).
  if (name === 'SyntaxError') return { ok: false, kind: 'syntax', message: `SyntaxError: ${message}` };
  // Anything else is not about the code's syntax (imports are not resolved here): the run reports it.
  return { ok: true };
}

/** Reads a compile error's fields, with the memory limit lifted so reading cannot fail on it. */
function describe(rt: QuickJSRuntime, vm: QuickJSContext, error: QuickJSHandle): ErrorInfo {
  rt.setMemoryLimit(-1);
  const out: Partial<Record<(typeof PROPS)[number], string | number>> = {};
  try {
    if (vm.typeof(error) !== 'object') return { message: String(vm.dump(error)) };
    for (const key of PROPS) {
      const h = vm.getProp(error, key);
      try {
        const type = vm.typeof(h);
        if (type === 'string') out[key] = vm.getString(h);
        else if (type === 'number') out[key] = vm.getNumber(h);
      } finally {
        h.dispose();
      }
    }
  } finally {
    error.dispose();
  }
  return {
    name: typeof out.name === 'string' ? out.name : undefined,
    message: typeof out.message === 'string' ? out.message : 'unknown error',
    stack: typeof out.stack === 'string' ? out.stack : undefined,
    fileName: typeof out.fileName === 'string' ? out.fileName : undefined,
    lineNumber: typeof out.lineNumber === 'number' ? out.lineNumber : undefined,
  };
}
