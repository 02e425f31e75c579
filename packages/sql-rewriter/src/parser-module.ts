/**
 * One instance of PostgreSQL's parser (libpg-query's WebAssembly build), owned by this package so that a broken
 * instance can be thrown away and replaced.
 *
 * Why not libpg-query's own `parseSync`: its `wasm/index.js` instantiates the module once, at import, into a
 * module-level variable that nothing can reset. After a failure inside the WebAssembly code that is not an
 * ordinary `ereport(ERROR)` (a JS stack overflow in the parse-tree writer, a FATAL out-of-memory that calls
 * `proc_exit`, an `abort()`), the instance is left mid-call: the shadow stack pointer is not restored, PostgreSQL's
 * memory contexts and error-handling state point into the abandoned call, and allocated memory is never freed.
 * Later calls then fail (`RuntimeError: table index is out of bounds`) or never return (an endless loop inside the
 * allocator blocks the event loop) - for every tenant, until a restart. So we instantiate the same Emscripten
 * factory (`wasm/libpg-query.js`) ourselves, as often as needed, from one compiled `WebAssembly.Module`.
 *
 * The Emscripten glue, when it thinks the program exited (`proc_exit`), sets `process.exitCode` before throwing
 * `ExitStatus`; that would make the host exit with status 1 at its next normal exit. Every call into an instance
 * restores `process.exitCode`. The glue registers no `process.on(...)` handlers and never calls `process.exit`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The part of the Emscripten module object we use (all are exported by libpg-query 18.1.5's build). */
interface PgQueryWasm {
  HEAPU8: Uint8Array;
  _malloc(size: number): number;
  _free(ptr: number): void;
  _wasm_parse_query_raw(queryPtr: number): number;
  _wasm_free_parse_result(resultPtr: number): void;
  getValue(ptr: number, type: 'i32'): number;
  UTF8ToString(ptr: number): string;
  stringToUTF8(str: string, ptr: number, maxBytes: number): void;
  lengthBytesUTF8(str: string): number;
}

// The compile target's lib (ES2023, no DOM) does not declare `WebAssembly`; these are the few members used here.
type WasmModule = object;
type WasmInstance = object;
type WasmImports = object;
const WA = (globalThis as unknown as {
  WebAssembly: {
    compile(bytes: Uint8Array): Promise<WasmModule>;
    instantiate(module: WasmModule, imports: WasmImports): Promise<WasmInstance>;
  };
}).WebAssembly;

interface FactoryOptions {
  instantiateWasm(imports: WasmImports, receive: (instance: WasmInstance) => void): object;
  print(line: string): void;
  printErr(line: string): void;
  onAbort(what: unknown): void;
}

type Factory = (options: FactoryOptions) => Promise<PgQueryWasm>;

const require = createRequire(import.meta.url);
const gluePath = require.resolve('libpg-query/wasm/libpg-query.js');
const wasmPath = join(dirname(gluePath), 'libpg-query.wasm');

/** An ordinary PostgreSQL parse error (`ereport(ERROR)` caught by libpg_query); the instance stays usable. */
export class PgParseError extends Error {
  override readonly name = 'PgParseError';
  constructor(
    message: string,
    /** Same shape as libpg-query's `SqlError.sqlDetails`; `cursorPosition` is 0-based. */
    readonly sqlDetails: { message: string; cursorPosition: number; fileName?: string; functionName?: string; lineNumber?: number },
  ) {
    super(message);
  }
}

/** Anything else that went wrong inside a parser instance. The instance is broken and must not be called again. */
export class ParserFailure extends Error {
  override readonly name = 'ParserFailure';
  constructor(
    message: string,
    override readonly cause: unknown,
    /** The last lines the instance wrote to stderr (PostgreSQL's FATAL message, memory-context dump, abort text). */
    readonly stderr: readonly string[],
  ) {
    super(message);
  }
}

const STDERR_LINES = 20;
const STDERR_LINE_CHARS = 300;

/** Runs `fn` and puts `process.exitCode` back if the Emscripten glue changed it (its `quit_` does on `exit()`). */
function keepingExitCode<T>(fn: () => T): T {
  const before = process.exitCode;
  try {
    return fn();
  } finally {
    if (process.exitCode !== before) process.exitCode = before;
  }
}

export class ParserInstance {
  #wasm: PgQueryWasm;
  #broken: ParserFailure | undefined;
  readonly #stderr: string[];

  /** Use `createParserInstance()`. */
  constructor(wasm: PgQueryWasm, stderr: string[]) {
    this.#wasm = wasm;
    this.#stderr = stderr;
  }

  /** Set once a call failed in a way that leaves the instance in an unknown state; it then refuses every call. */
  get broken(): ParserFailure | undefined {
    return this.#broken;
  }

  /** Current size of the instance's linear memory. WebAssembly memory only grows, so this is its high-water mark. */
  get heapBytes(): number {
    return this.#wasm.HEAPU8.length;
  }

  /** Marks the instance unusable (also used by tests to simulate a failure). */
  markBroken(failure: ParserFailure): void {
    this.#broken ??= failure;
  }

  /**
   * Parses `sql` into libpg-query's JSON parse result (`{ version, stmts? }`).
   * Throws `PgParseError` for an ordinary PostgreSQL error, `ParserFailure` for anything else (and the instance is
   * then broken). The caller bounds the input: this does not check length or NUL bytes.
   */
  parse(sql: string): { version: number; stmts?: Array<{ stmt: unknown; stmt_location?: number; stmt_len?: number }> } {
    if (this.#broken) throw this.#broken;
    this.#stderr.length = 0;
    return keepingExitCode(() => {
      try {
        return this.#parse(sql);
      } catch (err) {
        if (err instanceof PgParseError) throw err;
        const failure = new ParserFailure(`libpg-query failed: ${describe(err)}`, err, [...this.#stderr]);
        this.markBroken(failure);
        throw failure;
      }
    });
  }

  #parse(sql: string) {
    const wasm = this.#wasm;
    const size = wasm.lengthBytesUTF8(sql) + 1;
    const queryPtr = wasm._malloc(size);
    // malloc returning 0 must not reach stringToUTF8, which would write the text over address 0.
    if (!queryPtr) throw new Error(`malloc(${size}) failed`);
    let resultPtr = 0;
    let clean = false;
    try {
      wasm.stringToUTF8(sql, queryPtr, size);
      resultPtr = wasm._wasm_parse_query_raw(queryPtr);
      if (!resultPtr) throw new Error('wasm_parse_query_raw returned no result');
      // struct PgQueryParseResult { char *parse_tree; char *stderr_buffer; PgQueryError *error; }
      const treePtr = wasm.getValue(resultPtr, 'i32');
      const errorPtr = wasm.getValue(resultPtr + 8, 'i32');
      if (errorPtr) {
        // struct PgQueryError { char *message; char *funcname; char *filename; int lineno; int cursorpos; char *context; }
        const messagePtr = wasm.getValue(errorPtr, 'i32');
        const funcPtr = wasm.getValue(errorPtr + 4, 'i32');
        const filePtr = wasm.getValue(errorPtr + 8, 'i32');
        const lineno = wasm.getValue(errorPtr + 12, 'i32');
        const cursorpos = wasm.getValue(errorPtr + 16, 'i32');
        const message = messagePtr ? wasm.UTF8ToString(messagePtr) : 'unknown error';
        clean = true;
        throw new PgParseError(message, {
          message,
          cursorPosition: cursorpos > 0 ? cursorpos - 1 : 0,
          ...(funcPtr ? { functionName: wasm.UTF8ToString(funcPtr) } : {}),
          ...(filePtr ? { fileName: wasm.UTF8ToString(filePtr) } : {}),
          ...(lineno > 0 ? { lineNumber: lineno } : {}),
        });
      }
      if (!treePtr) throw new Error('wasm_parse_query_raw returned neither a tree nor an error');
      const tree = JSON.parse(wasm.UTF8ToString(treePtr));
      clean = true;
      return tree;
    } finally {
      // After a failure the instance's state is unknown (a call into its allocator may never return): free nothing.
      if (clean) {
        wasm._free(queryPtr);
        if (resultPtr) wasm._wasm_free_parse_result(resultPtr);
      }
    }
  }
}

const describe = (err: unknown): string => {
  if (err instanceof Error) return `${err.name}: ${err.message}`.slice(0, 500);
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message).slice(0, 500);
  return String(err).slice(0, 500);
};

let compiled: Promise<WasmModule> | undefined;

/** Instantiates a fresh parser (the WebAssembly binary is compiled once per process; each instance has its own memory). */
export async function createParserInstance(): Promise<ParserInstance> {
  compiled ??= WA.compile(readFileSync(wasmPath)).catch((err: unknown) => {
    compiled = undefined;
    throw err;
  });
  const compiledModule = await compiled;
  const factory = require(gluePath) as Factory;
  const stderr: string[] = [];
  const keep = (line: string) => {
    if (stderr.length >= STDERR_LINES) stderr.shift();
    stderr.push(String(line).slice(0, STDERR_LINE_CHARS));
  };
  return new Promise<ParserInstance>((resolve, reject) => {
    keepingExitCode(() =>
      factory({
        // Emscripten awaits `receive`; if instantiation fails it would wait forever, so reject from here.
        instantiateWasm(imports, receive) {
          WA.instantiate(compiledModule, imports).then((instance) => {
            try {
              keepingExitCode(() => receive(instance));
            } catch (err) {
              reject(err);
            }
          }, reject);
          return {};
        },
        print: keep,
        printErr: keep,
        onAbort: (what) => keep(`abort: ${String(what)}`),
      }).then((wasm) => resolve(new ParserInstance(wasm, stderr)), reject),
    );
  });
}
