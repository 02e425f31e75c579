import { StfError, type StfLimits } from '../types.js';
import { parseWasmModule, WASM_PAGE_BYTES, type WasmModuleDetails } from './inspect.js';
import { wasmApi } from './wasm-api.js';

export const EXTISM_ENV = 'extism:host/env';
export const EXTISM_USER = 'extism:host/user';
export const WASI_MODULE = 'wasi_snapshot_preview1';
/** The host functions this runtime provides in `extism:host/user`. */
export const USER_HOST_FUNCTIONS: readonly string[] = ['sql'];

/**
 * The Extism kernel functions @extism/extism 2.0.0-rc13 provides in `extism:host/env` (its CallContext, plus the
 * HTTP functions and vars it adds in worker mode). A test instantiates a module importing every one of them.
 */
export const EXTISM_KERNEL_FUNCTIONS: readonly string[] = [
  'alloc',
  'free',
  'length',
  'length_unsafe',
  'load_u8',
  'load_u64',
  'store_u8',
  'store_u64',
  'input_offset',
  'input_length',
  'input_load_u8',
  'input_load_u64',
  'output_set',
  'error_set',
  'error_get',
  'config_get',
  'var_get',
  'var_set',
  'http_request',
  'http_status_code',
  'http_headers',
  'log_trace',
  'log_debug',
  'log_info',
  'log_warn',
  'log_error',
  'get_log_level',
];

function mib(bytes: number): string {
  const v = bytes / (1024 * 1024);
  return `${Number.isInteger(v) ? v : v.toFixed(2)} MiB`;
}

function invalid(message: string, details?: string): StfError {
  return new StfError('invalid_module', message, details);
}

function checkImports(details: WasmModuleDetails): void {
  for (const imp of details.imports) {
    const what = `\`${imp.module}\` \`${imp.name}\``;
    if (imp.kind === 'memory') {
      throw invalid(
        `The module imports its memory (${what}); an STF module must define its own memory, with a maximum`,
      );
    }
    if (imp.kind !== 'function') {
      throw invalid(`The module imports a ${imp.kind} (${what}); only function imports are provided`);
    }
    const ok =
      (imp.module === EXTISM_ENV && EXTISM_KERNEL_FUNCTIONS.includes(imp.name)) ||
      (imp.module === EXTISM_USER && USER_HOST_FUNCTIONS.includes(imp.name)) ||
      imp.module === WASI_MODULE;
    if (!ok) {
      throw invalid(
        `The module imports ${what}, which the wasm runtime does not provide`,
        `available: the Extism kernel functions in ${EXTISM_ENV}, ${USER_HOST_FUNCTIONS.map((f) => `\`${f}\``).join(', ')} in ${EXTISM_USER}, and ${WASI_MODULE}`,
      );
    }
  }
}

/** Checks a parsed module against the STF rules (DECISIONS §6); `bytes` must already be valid wasm. */
export function checkWasmModule(details: WasmModuleDetails, limits: Pick<StfLimits, 'memoryBytes'>): void {
  const run = details.exports.find((e) => e.name === 'run');
  if (!run) throw invalid('The module does not export a function named `run`');
  if (run.kind !== 'function') throw invalid(`The module's \`run\` export is a ${run.kind}, not a function`);

  checkImports(details);

  const maxPages = Math.floor(limits.memoryBytes / WASM_PAGE_BYTES);
  const hint = `at most ${maxPages} pages (${mib(maxPages * WASM_PAGE_BYTES)}); e.g. \`(memory 1 16)\` in WAT, \`-Wl,--max-memory=<bytes>\` for C/Rust, \`--maximumMemory <pages>\` for AssemblyScript`;
  details.memories.forEach((m, i) => {
    const which = details.memories.length > 1 ? `memory ${i}` : 'memory';
    if (m.max === null) {
      throw invalid(`The module's ${which} declares no maximum size; declare one within the memory limit`, hint);
    }
    if (m.max > maxPages) {
      throw invalid(
        `The module's ${which} maximum of ${m.max} pages (${mib(m.max * WASM_PAGE_BYTES)}) exceeds the memory limit of ${mib(limits.memoryBytes)} (${maxPages} pages)`,
        hint,
      );
    }
  });
}

/**
 * Checks that `bytes` is a valid wasm module (`WebAssembly.validate`) and reads its structure; StfError
 * 'invalid_module' otherwise.
 */
export function readValidWasmModule(bytes: Uint8Array): WasmModuleDetails {
  if (!(bytes instanceof Uint8Array)) throw invalid('A WebAssembly module must be bytes');
  if (!wasmApi.validate(bytes)) {
    let reason: string | undefined;
    try {
      new wasmApi.Module(bytes); // only to get the engine's explanation
    } catch (e) {
      reason = e instanceof Error ? e.message : String(e);
    }
    throw invalid('Not a valid WebAssembly module', reason);
  }
  return parseWasmModule(bytes);
}

/**
 * Refuses (StfError 'invalid_module', with a message for the STF's author) a module that is not valid wasm, has no
 * `run` function export, imports something the runtime does not provide, or has a memory without a maximum or with
 * a maximum above `limits.memoryBytes`. A module without any memory is accepted (it has nothing to grow).
 */
export function validateWasmModule(bytes: Uint8Array, limits: Pick<StfLimits, 'memoryBytes'>): void {
  checkWasmModule(readValidWasmModule(bytes), limits);
}
