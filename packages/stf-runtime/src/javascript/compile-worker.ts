/**
 * Entry of the worker thread that compiles JavaScript STF code when a version is saved (started by syntax-check.ts).
 * It owns one sync QuickJS WASM module, checks one job at a time in a fresh runtime, and replaces the module when a
 * check poisoned it or left its heap large. Working off the main thread keeps the server responsive while a large
 * input compiles (QuickJS does not poll its interrupt handler while parsing), and gives the parser the same native
 * stack as the run's workers.
 */
import { parentPort } from 'node:worker_threads';
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import { DEFAULT_LIMITS } from '../types.js';
import { compileInEngine, type FromCompileWorker, type ToCompileWorker } from './compile-check.js';
import { compileQuickJS, heapBytes, heapLimitFor, heapMaximumFor, newBoundedQuickJS } from './quickjs-module.js';

const port = parentPort;
if (!port) throw new Error('compile-worker.ts must run in a worker thread');

const compiled = compileQuickJS();
/** The module, and the memory limit its heap maximum was made for. */
let moduleFor = DEFAULT_LIMITS.memoryBytes;
let module: Promise<QuickJSWASMModule> = newModule(moduleFor);

function newModule(memoryBytes: number): Promise<QuickJSWASMModule> {
  moduleFor = memoryBytes;
  const mod = newBoundedQuickJS(heapMaximumFor(memoryBytes), compiled);
  // If even a fresh module cannot load, the worker is useless: exit so the main thread starts another.
  mod.catch(() => process.exit(1));
  return mod;
}

function post(msg: FromCompileWorker): void {
  port!.postMessage(msg);
}

module.then(
  (mod) => {
    // V8 compiles the parser's WASM lazily: a few small compiles now keep that off the first save.
    for (const code of ['const a = [1, { b: "c" }];\nreturn a;', 'export default async (input) => ({ n: input.n + 1 });']) {
      compileInEngine(mod, { code, memoryBytes: 16 * 1024 * 1024, interruptAt: Date.now() + 1000 });
    }
    post({ type: 'ready' });
  },
  (e: unknown) => post({ type: 'fatal', message: e instanceof Error ? e.message : String(e) }),
);

port.on('message', (msg: ToCompileWorker) => {
  void handle(msg);
});

async function handle(msg: ToCompileWorker): Promise<void> {
  // The heap's maximum follows the memory limit of the check.
  if (moduleFor !== msg.memoryBytes) module = newModule(msg.memoryBytes);
  const mod = await module;
  const { outcome, poisoned } = compileInEngine(mod, msg);
  post({ type: 'result', id: msg.id, outcome });
  // WASM memory never shrinks: do not keep a heap a large input grew.
  if (poisoned || heapBytes(mod) > heapLimitFor(msg.memoryBytes)) module = newModule(msg.memoryBytes);
}
