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

/**
 * What a module may declare besides its memory. Each of these costs host memory outside linear memory — when the
 * engine validates the module (in the service process), compiles a function or instantiates the module (in the
 * plugin's worker) — so each is bounded, with room for what toolchains emit (one table, a few hundred globals,
 * functions of a few hundred KiB). Measured on Node 20 (docs/stfs.md): a 10,000,000-entry funcref table costs
 * about 280 MB, a global about 2.4 KiB just to validate, a function body about 60 bytes per byte when it is hot
 * enough to be optimised, 100,000 exports about 40 MB.
 */
export const WASM_MODULE_BOUNDS = {
  /** Bytes of the whole module. */
  moduleBytes: 16 * 1024 * 1024,
  types: 10_000,
  imports: 1_000,
  functions: 100_000,
  /** Bytes of one function body. */
  functionBytes: 1024 * 1024,
  /** Locals of one function. */
  locals: 50_000,
  tables: 16,
  /**
   * Entries of all tables together, counted at their declared maximum (which every table must have). Small because
   * of time as much as memory: a worker in a loop of table.copy, table.init or table.fill over n entries takes
   * about n² / 5,000,000 seconds to stop when terminated (V8 11), 20 s at 10,000 entries.
   */
  tableEntries: 10_000,
  globals: 10_000,
  exports: 10_000,
  tags: 1_000,
  dataSegments: 100_000,
  elementSegments: 10_000,
  /** Entries of all element segments together (what table.init copies, so bounded like tables). */
  elementEntries: 10_000,
} as const;

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

const COUNT_NAMES: Record<Exclude<keyof WasmModuleDetails['counts'], 'largestFunctionBytes' | 'mostLocals' | 'elementEntries'>, string> = {
  types: 'types',
  functions: 'functions',
  globals: 'globals',
  exports: 'exports',
  tags: 'exception tags',
  dataSegments: 'data segments',
  elementSegments: 'element segments',
};

function checkModuleSize(bytes: number): void {
  const max = WASM_MODULE_BOUNDS.moduleBytes;
  if (bytes > max) throw invalid(`The module is ${bytes} bytes; a wasm module may have at most ${max} (${mib(max)})`);
}

/**
 * Refuses a module that declares more than WASM_MODULE_BOUNDS allows (tables, globals, functions, …). It needs only
 * the parse, so it runs before the engine sees the module: validating a million globals alone takes V8 seconds
 * and gigabytes.
 */
export function checkWasmBounds(details: WasmModuleDetails, moduleBytes: number): void {
  const b = WASM_MODULE_BOUNDS;
  const over = (what: string, n: number, max: number) =>
    invalid(`The module declares ${n} ${what}; at most ${max} are allowed`, 'wasm module bounds: docs/stfs.md#the-wasm-runtime');
  checkModuleSize(moduleBytes);
  const c = details.counts;
  for (const [key, what] of Object.entries(COUNT_NAMES) as [keyof typeof COUNT_NAMES, string][]) {
    if (c[key] > b[key]) throw over(what, c[key], b[key]);
  }
  if (details.imports.length > b.imports) throw over('imports', details.imports.length, b.imports);
  if (c.elementEntries > b.elementEntries) throw over('element segment entries', c.elementEntries, b.elementEntries);
  if (c.largestFunctionBytes > b.functionBytes) {
    throw invalid(`A function body of the module is ${c.largestFunctionBytes} bytes; at most ${b.functionBytes} (${mib(b.functionBytes)}) are allowed`);
  }
  if (c.mostLocals > b.locals) throw invalid(`A function of the module declares ${c.mostLocals} locals; at most ${b.locals} are allowed`);
  if (details.tables.length > b.tables) throw over('tables', details.tables.length, b.tables);
  let entries = 0;
  details.tables.forEach((t, i) => {
    const which = details.tables.length > 1 ? `table ${i}` : 'table';
    if (t.max === null) {
      throw invalid(
        `The module's ${which} declares no maximum size; declare one (at most ${b.tableEntries} entries for all tables)`,
        'e.g. `(table 4 4 funcref)` in WAT; wasm-ld and rustc declare one unless asked for a growable table',
      );
    }
    entries += t.max;
  });
  if (entries > b.tableEntries) {
    throw invalid(`The module's tables may grow to ${entries} entries; at most ${b.tableEntries} are allowed for all tables`);
  }
}

/** Checks a parsed module against the STF rules (docs/stfs.md#the-wasm-runtime); `bytes` must already be valid wasm. */
export function checkWasmModule(details: WasmModuleDetails, limits: Pick<StfLimits, 'memoryBytes'>): void {
  const run = details.exports.find((e) => e.name === 'run');
  if (!run) throw invalid('The module does not export a function named `run`');
  if (run.kind !== 'function') throw invalid(`The module's \`run\` export is a ${run.kind}, not a function`);

  checkImports(details);

  const maxPages = Math.floor(limits.memoryBytes / WASM_PAGE_BYTES);
  const hint = `at most ${maxPages} pages (${mib(maxPages * WASM_PAGE_BYTES)}); e.g. \`(memory 1 16)\` in WAT, \`-Wl,--max-memory=<bytes>\` for C/Rust, \`--maximumMemory <pages>\` for AssemblyScript`;
  let pages = 0;
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
    pages += m.max;
  });
  // Engines with multiple memories: the limit is for all of them together.
  if (pages > maxPages) {
    throw invalid(
      `The module's memories may grow to ${pages} pages (${mib(pages * WASM_PAGE_BYTES)}) together; the memory limit is ${mib(limits.memoryBytes)} (${maxPages} pages)`,
      hint,
    );
  }
}

/**
 * Reads a module's structure, checks it against WASM_MODULE_BOUNDS, then that it is valid wasm
 * (`WebAssembly.validate`); StfError 'invalid_module' otherwise.
 */
export function readValidWasmModule(bytes: Uint8Array): WasmModuleDetails {
  if (!(bytes instanceof Uint8Array)) throw invalid('A WebAssembly module must be bytes');
  // The bounds first: the engine's own validation is what a module of a million globals makes allocate.
  checkModuleSize(bytes.length);
  let details: WasmModuleDetails;
  try {
    details = parseWasmModule(bytes);
  } catch (e) {
    // The engine's verdict would be the same; the parser's reason says where.
    const reason = e instanceof StfError ? `${e.message.replace(/^Malformed WebAssembly module: /, '')} (${e.details})` : undefined;
    throw invalid('Not a valid WebAssembly module', reason);
  }
  checkWasmBounds(details, bytes.length);
  if (!wasmApi.validate(bytes)) {
    let reason: string | undefined;
    try {
      new wasmApi.Module(bytes); // only to get the engine's explanation
    } catch (e) {
      reason = e instanceof Error ? e.message : String(e);
    }
    throw invalid('Not a valid WebAssembly module', reason);
  }
  return details;
}

/**
 * Refuses (StfError 'invalid_module', with a message for the STF's author) a module that is not valid wasm, has no
 * `run` function export, imports something the runtime does not provide, has a memory without a maximum or
 * memories above `limits.memoryBytes`, or declares more than WASM_MODULE_BOUNDS (a table without a maximum, too
 * many table entries, globals, functions, …). A module without any memory is accepted (it has nothing to grow).
 */
export function validateWasmModule(bytes: Uint8Array, limits: Pick<StfLimits, 'memoryBytes'>): void {
  checkWasmModule(readValidWasmModule(bytes), limits);
}
