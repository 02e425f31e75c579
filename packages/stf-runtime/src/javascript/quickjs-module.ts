/**
 * QuickJS WASM modules whose heap cannot outgrow the run's memory limit.
 *
 * Why: this QuickJS build counts 8 bytes per allocation (it has no malloc_usable_size), so `setMemoryLimit` refuses
 * only a single allocation larger than the limit, never many of them together; and the interrupt handler that
 * watches the heap runs only every few thousand bytecode steps. `keep.push("x".repeat(60 << 20))` in a loop grew a
 * worker's WASM memory to the build's 2 GiB maximum before either noticed, and WASM memory never shrinks. Here the
 * module gets its own `WebAssembly.Memory` with a maximum near the limit, so the allocation that would pass it fails
 * at once (QuickJS: "out of memory") — enforced on every allocation by the engine, not sampled.
 *
 * The compiled code is shared: the pool compiles the QuickJS WASM once and hands the module to every worker, so a
 * fresh heap costs an instantiation (a few ms), not a compilation, and keeps V8's optimised code.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { newQuickJSWASMModule, newVariant, type QuickJSWASMModule, RELEASE_SYNC } from 'quickjs-emscripten';
import { type CompiledWasmModule, wasmApi } from '../wasm/wasm-api.js';

const PAGE_BYTES = 64 * 1024;

/** The heap QuickJS's build starts with (its INITIAL_MEMORY: static data, stack, runtime). */
export const INITIAL_HEAP_BYTES = 16 * 1024 * 1024;

/** What the WASM heap may hold beyond `memoryBytes` before the interrupt handler stops the guest. */
export const HEAP_SLACK_BYTES = 16 * 1024 * 1024;

/**
 * Beyond the interrupt handler's backstop, room before the hard maximum: slow growth is caught by the handler (a
 * clean 'memory' failure with the heap still usable), fast growth by the maximum.
 */
const HEAP_HEADROOM_BYTES = 8 * 1024 * 1024;

/** The heap size past which the guest is stopped, for a run limited to `memoryBytes`. */
export function heapLimitFor(memoryBytes: number): number {
  return memoryBytes + HEAP_SLACK_BYTES;
}

/** The hard maximum of a module's WASM memory for runs limited to `memoryBytes`. */
export function heapMaximumFor(memoryBytes: number): number {
  return heapLimitFor(memoryBytes) + HEAP_HEADROOM_BYTES;
}

/**
 * Compiles the QuickJS WASM of the RELEASE_SYNC variant (main thread, once), or undefined when its file cannot be
 * found (each module then compiles its own copy: slower, equally bounded).
 */
export function compileQuickJS(): CompiledWasmModule | undefined {
  try {
    const fromQuickjs = createRequire(createRequire(import.meta.url).resolve('quickjs-emscripten'));
    return new wasmApi.Module(readFileSync(fromQuickjs.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')));
  } catch {
    return undefined;
  }
}

/** A QuickJS module whose WASM memory starts at INITIAL_HEAP_BYTES and can never grow past `maximumBytes`. */
export function newBoundedQuickJS(maximumBytes: number, compiled?: CompiledWasmModule): Promise<QuickJSWASMModule> {
  const pages = Math.max(INITIAL_HEAP_BYTES, Math.min(maximumBytes, 2 ** 31)) / PAGE_BYTES;
  const memory = new wasmApi.Memory({ initial: INITIAL_HEAP_BYTES / PAGE_BYTES, maximum: Math.ceil(pages) });
  const options = { wasmMemory: memory, ...(compiled ? { wasmModule: compiled } : {}) } as Parameters<typeof newVariant>[1];
  return newQuickJSWASMModule(newVariant(RELEASE_SYNC, options));
}

/** Size of a module's WASM memory (0 when the variant does not expose it). */
export function heapBytes(mod: QuickJSWASMModule): number {
  try {
    return (mod.getWasmMemory() as unknown as { buffer: ArrayBuffer }).buffer.byteLength;
  } catch {
    return 0;
  }
}
