import { StfError } from '../types.js';

/**
 * A small reader of the WebAssembly binary format: just enough to list a module's imports, memories, tables and
 * exports and to count what an engine would allocate for it (validate.ts bounds those counts), without compiling it. Every length and count comes from the (untrusted) module, so every read is bounds-checked
 * against the enclosing section and a malformed module is refused with StfError('invalid_module').
 */

export const WASM_PAGE_BYTES = 64 * 1024;

export interface WasmMemoryInfo {
  /** Initial size in 64 KiB pages. */
  min: number;
  /** Maximum size in 64 KiB pages, or null when the module declares none (it could grow without bound). */
  max: number | null;
  /** True when the memory is imported rather than defined by the module. */
  imported: boolean;
}

export interface WasmModuleInfo {
  /** Export names, in module order. */
  exports: string[];
  /** Memory 0 (the one Extism PDKs and toolchains use), or null when the module has no memory. */
  memory: WasmMemoryInfo | null;
}

export type WasmExternKind = 'function' | 'table' | 'memory' | 'global' | 'tag';

/** Everything the parser reads; `inspectWasmModule` returns the public subset. */
export interface WasmModuleDetails {
  imports: { module: string; name: string; kind: WasmExternKind }[];
  exports: { name: string; kind: WasmExternKind }[];
  /** All memories in index order: imported ones first, then the memory section's. */
  memories: (WasmMemoryInfo & { shared: boolean; memory64: boolean })[];
  /** All tables in index order (imported ones first); `min` and `max` are entries. */
  tables: WasmMemoryInfo[];
  /**
   * How many of each thing the module declares: each costs host memory outside linear memory when the engine
   * validates, compiles or instantiates it (an engine allocates per global, table entry, export, …).
   */
  counts: WasmModuleCounts;
}

export interface WasmModuleCounts {
  types: number;
  /** Functions the module defines (imports not included). */
  functions: number;
  globals: number;
  exports: number;
  tags: number;
  dataSegments: number;
  elementSegments: number;
  /** Entries of all element segments together. */
  elementEntries: number;
  /** The largest function body, in bytes. */
  largestFunctionBytes: number;
  /** The most locals one function declares (parameters not included). */
  mostLocals: number;
}

const KINDS: readonly WasmExternKind[] = ['function', 'table', 'memory', 'global', 'tag'];
const SECTION_TYPE = 1;
const SECTION_IMPORT = 2;
const SECTION_FUNCTION = 3;
const SECTION_TABLE = 4;
const SECTION_MEMORY = 5;
const SECTION_GLOBAL = 6;
const SECTION_EXPORT = 7;
const SECTION_ELEMENT = 9;
const SECTION_CODE = 10;
const SECTION_DATA = 11;
const SECTION_TAG = 13;
/** Sections of which only the number of entries is read. */
const COUNTED_SECTIONS: Partial<Record<number, keyof WasmModuleCounts>> = {
  [SECTION_TYPE]: 'types',
  [SECTION_FUNCTION]: 'functions',
  [SECTION_GLOBAL]: 'globals',
  [SECTION_DATA]: 'dataSegments',
  [SECTION_TAG]: 'tags',
};
const MAX_SECTION_ID = 13; // tag section (exception handling)

function malformed(message: string, offset: number): StfError {
  return new StfError('invalid_module', `Malformed WebAssembly module: ${message}`, `at byte offset ${offset}`);
}

class Reader {
  constructor(
    readonly bytes: Uint8Array,
    public pos: number,
    /** Exclusive end: no read may go past it (the end of the module or of the current section). */
    public readonly end: number,
  ) {}

  get remaining(): number {
    return this.end - this.pos;
  }

  peek(): number {
    if (this.pos >= this.end) throw malformed('unexpected end of data', this.pos);
    return this.bytes[this.pos]!;
  }

  byte(): number {
    if (this.pos >= this.end) throw malformed('unexpected end of data', this.pos);
    return this.bytes[this.pos++]!;
  }

  skip(n: number): void {
    if (n > this.remaining) throw malformed(`length ${n} runs past the end of its section`, this.pos);
    this.pos += n;
  }

  /** Unsigned LEB128 of at most `bits` bits (32 or 64), with the canonical size bound of the spec. */
  uleb(bits: 32 | 64): number {
    const start = this.pos;
    const maxBytes = Math.ceil(bits / 7);
    let result = 0n;
    for (let i = 0; i < maxBytes; i++) {
      const b = this.byte();
      result |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) {
        // The unused high bits of the last byte must be zero (a value that does not fit is not a valid uN).
        if (i === maxBytes - 1 && b >> (bits - 7 * i) !== 0) throw malformed(`integer too large for u${bits}`, start);
        // Values above 2^53 only occur as 64-bit memory limits, where an approximation still compares correctly.
        return Number(result);
      }
    }
    throw malformed(`LEB128 integer longer than ${maxBytes} bytes`, start);
  }

  u32(): number {
    return this.uleb(32);
  }

  /** Signed 33-bit LEB128 (heap types); only its extent matters here. */
  s33(): void {
    this.s33Like(5);
  }

  /** A signed LEB128 of at most `maxBytes` bytes, skipped. */
  s33Like(maxBytes: number): void {
    const start = this.pos;
    for (let i = 0; i < maxBytes; i++) {
      if ((this.byte() & 0x80) === 0) return;
    }
    throw malformed(`LEB128 integer longer than ${maxBytes} bytes`, start);
  }

  name(): string {
    const len = this.u32();
    const start = this.pos;
    this.skip(len);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(this.bytes.subarray(start, start + len));
    } catch {
      throw malformed('a name is not valid UTF-8', start);
    }
  }

  /** A vector count; every element takes at least `minElementBytes`, so a count the section cannot hold is refused. */
  count(minElementBytes: number): number {
    const start = this.pos;
    const n = this.u32();
    if (n * minElementBytes > this.remaining) throw malformed(`count ${n} does not fit in its section`, start);
    return n;
  }
}

function readLimits(r: Reader, what: 'memory' | 'table'): WasmMemoryInfo & { shared: boolean; memory64: boolean } {
  const at = r.pos;
  const flags = r.byte();
  // bit 0: has maximum; bit 1: shared (memories only); bit 2: 64-bit indices (memory64 / table64).
  const allowed = what === 'memory' ? 0x07 : 0x05;
  if ((flags & ~allowed) !== 0) throw malformed(`unsupported ${what} limits flags 0x${flags.toString(16)}`, at);
  const wide = (flags & 0x04) !== 0;
  const min = r.uleb(wide ? 64 : 32);
  const max = flags & 0x01 ? r.uleb(wide ? 64 : 32) : null;
  if (max !== null && max < min) throw malformed(`${what} maximum ${max} is below its minimum ${min}`, at);
  return { min, max, imported: false, shared: (flags & 0x02) !== 0, memory64: wide };
}

/** A reference type: a one-byte shorthand, or 0x63/0x64 (ref null / ref) followed by a heap type. */
function readRefOrValType(r: Reader, what: string): void {
  const at = r.pos;
  const t = r.byte();
  if (t === 0x63 || t === 0x64) {
    r.s33();
    return;
  }
  // numeric/vector types 0x7B..0x7F, abstract reference shorthands 0x69..0x74 (funcref 0x70, externref 0x6F, …)
  if ((t >= 0x7b && t <= 0x7f) || (t >= 0x69 && t <= 0x74)) return;
  throw malformed(`unknown ${what} type 0x${t.toString(16)}`, at);
}

function readImports(r: Reader, out: WasmModuleDetails): void {
  const n = r.count(4);
  for (let i = 0; i < n; i++) {
    const module = r.name();
    const name = r.name();
    const at = r.pos;
    const kind = r.byte();
    switch (kind) {
      case 0x00: // function: type index
        r.u32();
        break;
      case 0x01: {
        // table: reference type + limits
        readRefOrValType(r, 'table element');
        const { min, max } = readLimits(r, 'table');
        out.tables.push({ min, max, imported: true });
        break;
      }
      case 0x02: // memory: limits
        out.memories.push({ ...readLimits(r, 'memory'), imported: true });
        break;
      case 0x03: {
        // global: value type + mutability
        readRefOrValType(r, 'global value');
        const mutAt = r.pos;
        if (r.byte() > 1) throw malformed('invalid global mutability', mutAt);
        break;
      }
      case 0x04: {
        // tag: attribute (0 = exception) + type index
        const attrAt = r.pos;
        if (r.byte() !== 0) throw malformed('invalid tag attribute', attrAt);
        r.u32();
        break;
      }
      default:
        throw malformed(`unknown import kind 0x${kind.toString(16)}`, at);
    }
    out.imports.push({ module, name, kind: KINDS[kind]! });
  }
}

function readMemories(r: Reader, out: WasmModuleDetails): void {
  const n = r.count(2);
  for (let i = 0; i < n; i++) out.memories.push(readLimits(r, 'memory'));
}

/**
 * Skips a constant expression up to its `end`. Only the instructions engines accept there (the MVP's, extended
 * constants, reference types, `v128.const`); anything else is refused rather than guessed at.
 */
function skipConstExpr(r: Reader): void {
  for (;;) {
    const at = r.pos;
    const op = r.byte();
    switch (op) {
      case 0x0b: // end
        return;
      case 0x41: // i32.const
      case 0x42: // i64.const (both signed LEB128; only their extent matters)
        r.s33Like(op === 0x41 ? 5 : 10);
        break;
      case 0x43: // f32.const
        r.skip(4);
        break;
      case 0x44: // f64.const
        r.skip(8);
        break;
      case 0x23: // global.get
      case 0xd2: // ref.func
        r.u32();
        break;
      case 0xd0: // ref.null heap type
        r.s33();
        break;
      case 0x6a: // i32.add, i32.sub, i32.mul, i64.add, i64.sub, i64.mul (extended constants)
      case 0x6b:
      case 0x6c:
      case 0x7c:
      case 0x7d:
      case 0x7e:
        break;
      case 0xfd: {
        // v128.const: prefix 0xfd, opcode 12, 16 bytes
        if (r.u32() !== 12) throw malformed('unsupported instruction in a constant expression', at);
        r.skip(16);
        break;
      }
      default:
        throw malformed(`unsupported instruction 0x${op.toString(16)} in a constant expression`, at);
    }
  }
}

function readTables(r: Reader, out: WasmModuleDetails): void {
  const n = r.count(3);
  for (let i = 0; i < n; i++) {
    // A table with an initialiser is 0x40 0x00 reftype limits expr; a plain one is reftype limits.
    const withInit = r.peek() === 0x40;
    if (withInit) {
      r.byte();
      const at = r.pos;
      if (r.byte() !== 0x00) throw malformed('invalid table initialiser flag', at);
    }
    readRefOrValType(r, 'table element');
    const { min, max } = readLimits(r, 'table');
    if (withInit) skipConstExpr(r);
    out.tables.push({ min, max, imported: false });
  }
}

function readElements(r: Reader, out: WasmModuleDetails): void {
  const n = r.count(2);
  out.counts.elementSegments = n;
  for (let i = 0; i < n; i++) {
    const at = r.pos;
    const flags = r.u32();
    if (flags > 7) throw malformed(`unknown element segment flags ${flags}`, at);
    // bit 0: passive or declarative (no offset) unless bit 1; bit 1: explicit table index or declarative;
    // bit 2: entries are expressions (with a reference type) instead of function indices (with an element kind).
    const active = (flags & 0x01) === 0;
    if (flags & 0x02 && active) r.u32(); // table index
    if (active) skipConstExpr(r);
    if (flags & 0x03) {
      if (flags & 0x04) readRefOrValType(r, 'element');
      else if (r.byte() !== 0x00) throw malformed('unknown element kind', r.pos - 1);
    }
    const entries = r.count(1);
    out.counts.elementEntries += entries;
    for (let j = 0; j < entries; j++) {
      if (flags & 0x04) skipConstExpr(r);
      else r.u32();
    }
  }
}

function readCode(r: Reader, out: WasmModuleDetails): void {
  const n = r.count(2);
  for (let i = 0; i < n; i++) {
    const size = r.u32();
    const start = r.pos;
    if (size > r.remaining) throw malformed(`function body of ${size} bytes runs past the end of its section`, start);
    const body = new Reader(r.bytes, start, start + size);
    r.pos += size;
    out.counts.largestFunctionBytes = Math.max(out.counts.largestFunctionBytes, size);
    let locals = 0;
    const groups = body.count(2);
    for (let j = 0; j < groups; j++) {
      locals += body.u32();
      readRefOrValType(body, 'local');
    }
    out.counts.mostLocals = Math.max(out.counts.mostLocals, locals);
  }
}

function readExports(r: Reader, out: WasmModuleDetails): void {
  const n = r.count(3);
  out.counts.exports = n;
  for (let i = 0; i < n; i++) {
    const name = r.name();
    const at = r.pos;
    const kind = r.byte();
    if (kind >= KINDS.length) throw malformed(`unknown export kind 0x${kind.toString(16)}`, at);
    r.u32();
    out.exports.push({ name, kind: KINDS[kind]! });
  }
}

/** Reads a module's imports, memories, tables, exports and counts. Throws StfError('invalid_module') for malformed input. */
export function parseWasmModule(bytes: Uint8Array): WasmModuleDetails {
  if (!(bytes instanceof Uint8Array)) throw new StfError('invalid_module', 'A WebAssembly module must be bytes');
  const r = new Reader(bytes, 0, bytes.length);
  if (bytes.length < 8) throw malformed('shorter than the 8-byte header', 0);
  if (bytes[0] !== 0x00 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw malformed('missing the \\0asm magic number', 0);
  }
  if (bytes[4] !== 0x01 || bytes[5] !== 0x00 || bytes[6] !== 0x00 || bytes[7] !== 0x00) {
    throw malformed('unsupported binary version (only version 1 modules are accepted)', 4);
  }
  r.pos = 8;

  const out: WasmModuleDetails = {
    imports: [],
    exports: [],
    memories: [],
    tables: [],
    counts: {
      types: 0,
      functions: 0,
      globals: 0,
      exports: 0,
      tags: 0,
      dataSegments: 0,
      elementSegments: 0,
      elementEntries: 0,
      largestFunctionBytes: 0,
      mostLocals: 0,
    },
  };
  const seen = new Set<number>();
  while (r.remaining > 0) {
    const at = r.pos;
    const id = r.byte();
    const size = r.u32();
    if (size > r.remaining) throw malformed(`section ${id} claims ${size} bytes but only ${r.remaining} remain`, at);
    const body = new Reader(bytes, r.pos, r.pos + size);
    r.pos += size;
    if (id === 0) continue; // custom section: anywhere, any number
    if (id > MAX_SECTION_ID) throw malformed(`unknown section id ${id}`, at);
    if (seen.has(id)) throw malformed(`duplicate section ${id}`, at);
    seen.add(id);
    if (id === SECTION_IMPORT) readImports(body, out);
    else if (id === SECTION_MEMORY) readMemories(body, out);
    else if (id === SECTION_EXPORT) readExports(body, out);
    else if (id === SECTION_TABLE) readTables(body, out);
    else if (id === SECTION_ELEMENT) readElements(body, out);
    else if (id === SECTION_CODE) readCode(body, out);
    else {
      // Only the count matters (every entry takes at least a byte); the engine validates the rest.
      const counted = COUNTED_SECTIONS[id];
      if (counted) out.counts[counted] = body.count(1);
      continue;
    }
    if (body.remaining !== 0) throw malformed(`section ${id} has ${body.remaining} trailing bytes`, body.pos);
  }
  return out;
}

/**
 * Lists a module's exports and describes its memory 0 (limits in 64 KiB pages, and whether it is imported).
 * Only reads the binary structure; use `validateWasmModule` for the full check.
 */
export function inspectWasmModule(bytes: Uint8Array): WasmModuleInfo {
  const details = parseWasmModule(bytes);
  const m = details.memories[0];
  return {
    exports: details.exports.map((e) => e.name),
    memory: m ? { min: m.min, max: m.max, imported: m.imported } : null,
  };
}
