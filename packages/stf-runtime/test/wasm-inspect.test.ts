import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, StfError } from '../src/types.js';
import { inspectWasmModule, validateWasmModule } from '../src/wasm/index.js';
import { EXTISM_KERNEL_FUNCTIONS } from '../src/wasm/validate.js';
import { fixture, wat } from './fixtures/wasm/build.js';

const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
const mod = (...sections: number[][]) => new Uint8Array([...HEADER, ...sections.flat()]);
/** A section: id, size (one-byte LEB128, so < 128), body. */
const section = (id: number, body: number[]) => [id, body.length, ...body];
const name = (s: string) => [s.length, ...new TextEncoder().encode(s)];

function invalidModule(f: () => unknown): StfError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(StfError);
    expect((e as StfError).kind).toBe('invalid_module');
    return e as StfError;
  }
  throw new Error('expected an invalid_module StfError');
}

describe('inspectWasmModule', () => {
  it('lists the exports and the memory limits of a plugin built from WAT', () => {
    expect(inspectWasmModule(fixture('echo'))).toEqual({
      exports: ['memory', 'run'],
      memory: { min: 1, max: 16, imported: false },
    });
    expect(inspectWasmModule(fixture('no-max')).memory).toEqual({ min: 1, max: null, imported: false });
    expect(inspectWasmModule(fixture('no-run')).exports).toEqual(['memory', 'main']);
  });

  it('reads imported memories, imports of every kind and modules without memory', () => {
    const bytes = wat(`(module
      (import "extism:host/env" "alloc" (func (param i64) (result i64)))
      (import "env" "table" (table 1 10 funcref))
      (import "env" "g" (global (mut i32)))
      (import "env" "mem" (memory 2 3))
      (func (export "run") (result i32) (i32.const 0)))`);
    expect(inspectWasmModule(bytes)).toEqual({ exports: ['run'], memory: { min: 2, max: 3, imported: true } });
    expect(inspectWasmModule(wat('(module (func (export "run")))'))).toEqual({ exports: ['run'], memory: null });
    expect(inspectWasmModule(mod())).toEqual({ exports: [], memory: null });
  });

  it('reads 64-bit memory limits and skips custom and unknown-to-it sections', () => {
    const bytes = wat('(module (memory (export "m") i64 1 70000))', 'm64.wat', { memory64: true });
    expect(inspectWasmModule(bytes).memory).toEqual({ min: 1, max: 70000, imported: false });
    const custom = section(0, [...name('note'), 1, 2, 3]);
    const memory = section(5, [1, 0x01, 0x81, 0x01, 0x82, 0x01]); // one memory, min 129, max 130 (2-byte LEBs)
    expect(inspectWasmModule(mod(custom, memory, custom)).memory).toEqual({ min: 129, max: 130, imported: false });
  });

  it('refuses malformed bytes with invalid_module, never trusting a length', () => {
    const cases: [string, Uint8Array, RegExp][] = [
      ['empty', new Uint8Array(), /shorter than the 8-byte header/],
      ['bad magic', new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 1, 0, 0, 0]), /magic/],
      ['version 2', new Uint8Array([0, 0x61, 0x73, 0x6d, 2, 0, 0, 0]), /version/],
      ['section longer than the module', mod([7, 50, 0]), /claims 50 bytes but only 1 remain/],
      ['truncated LEB128 section size', mod([7, 0x80]), /unexpected end/],
      ['truncated LEB128 inside a section', mod(section(5, [1, 0x01, 0x80])), /unexpected end/],
      ['overlong LEB128', mod([7, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), /longer than 5 bytes/],
      ['u32 overflow', mod([7, 0xff, 0xff, 0xff, 0xff, 0x1f]), /too large for u32/],
      ['name past its section', mod(section(7, [1, 9, 0x72, 0x75, 0x6e, 0])), /length 9 runs past the end/],
      ['name not UTF-8', mod(section(7, [1, 2, 0xc3, 0x28, 0, 0])), /not valid UTF-8/],
      ['count larger than the section', mod(section(7, [0xff, 0xff, 0x03])), /count 65535 does not fit/],
      ['unknown export kind', mod(section(7, [1, ...name('run'), 9, 0])), /unknown export kind/],
      ['trailing bytes in a section', mod(section(7, [0, 0])), /trailing bytes/],
      ['duplicate section', mod(section(7, [0]), section(7, [0])), /duplicate section 7/],
      ['unknown section id', mod(section(42, [])), /unknown section id 42/],
      ['unsupported memory flags', mod(section(5, [1, 0x08, 1])), /unsupported memory limits flags 0x8/],
      ['maximum below minimum', mod(section(5, [1, 0x01, 5, 2])), /maximum 2 is below its minimum 5/],
      ['unknown import kind', mod(section(2, [1, ...name('a'), ...name('b'), 7])), /unknown import kind/],
      ['bad global type', mod(section(2, [1, ...name('a'), ...name('b'), 3, 0x42, 0])), /unknown global value type/],
    ];
    for (const [label, bytes, message] of cases) {
      const err = invalidModule(() => inspectWasmModule(bytes));
      expect(err.message, label).toMatch(message);
      expect(err.details, label).toMatch(/^at byte offset \d+$/);
    }
  });

  it('only ever throws invalid_module for truncated or corrupted modules', () => {
    const good = fixture('sql');
    for (let len = 0; len < good.length; len++) {
      try {
        inspectWasmModule(good.subarray(0, len));
      } catch (e) {
        expect((e as StfError).kind).toBe('invalid_module');
      }
    }
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 3000; i++) {
      const bytes = good.slice();
      for (let k = 0; k < 1 + Math.floor(random() * 4); k++) {
        bytes[8 + Math.floor(random() * (bytes.length - 8))] = Math.floor(random() * 256);
      }
      try {
        inspectWasmModule(bytes);
      } catch (e) {
        expect((e as StfError).kind).toBe('invalid_module');
      }
    }
  });
});

describe('validateWasmModule', () => {
  const limits = DEFAULT_LIMITS; // 64 MiB = 1024 pages

  it('accepts a plugin with a run export and a bounded memory within the limit', () => {
    expect(() => validateWasmModule(fixture('echo'), limits)).not.toThrow();
    expect(() => validateWasmModule(fixture('sql'), limits)).not.toThrow();
    expect(() => validateWasmModule(fixture('wasi'), limits)).not.toThrow();
    const atLimit = wat('(module (memory 1 1024) (func (export "run") (result i32) (i32.const 0)))');
    expect(() => validateWasmModule(atLimit, limits)).not.toThrow();
    expect(() => validateWasmModule(wat('(module (func (export "run")))'), limits)).not.toThrow();
  });

  it('refuses bytes that are not valid wasm, with the engine reason', () => {
    const err = invalidModule(() => validateWasmModule(new TextEncoder().encode('console.log(1)'), limits));
    expect(err.message).toBe('Not a valid WebAssembly module');
    expect(err.details).toMatch(/magic/i);
    // Structurally fine for the parser, but the function has no body: only WebAssembly.validate sees it.
    invalidModule(() => validateWasmModule(mod(section(1, [1, 0x60, 0, 0]), section(3, [1, 0])), limits));
  });

  it('refuses a module without a run function', () => {
    expect(invalidModule(() => validateWasmModule(fixture('no-run'), limits)).message).toBe(
      'The module does not export a function named `run`',
    );
    const memoryNamedRun = wat('(module (memory (export "run") 1 1))');
    expect(invalidModule(() => validateWasmModule(memoryNamedRun, limits)).message).toMatch(
      /`run` export is a memory, not a function/,
    );
  });

  it('refuses a memory without a maximum, or with a maximum above the limit', () => {
    const noMax = invalidModule(() => validateWasmModule(fixture('no-max'), limits));
    expect(noMax.message).toMatch(/memory declares no maximum size/);
    expect(noMax.details).toMatch(/at most 1024 pages \(64 MiB\)/);
    const tooBig = invalidModule(() => validateWasmModule(fixture('too-big'), limits));
    expect(tooBig.message).toBe(
      "The module's memory maximum of 2048 pages (128 MiB) exceeds the memory limit of 64 MiB (1024 pages)",
    );
    expect(() => validateWasmModule(fixture('too-big'), { memoryBytes: 128 * 1024 * 1024 })).not.toThrow();
    expect(() => validateWasmModule(fixture('echo'), { memoryBytes: 512 * 1024 })).toThrow(/exceeds/);
  });

  it('refuses imports the runtime does not provide', () => {
    const unknown = wat('(module (import "env" "abort" (func)) (func (export "run")))');
    const err = invalidModule(() => validateWasmModule(unknown, limits));
    expect(err.message).toBe('The module imports `env` `abort`, which the wasm runtime does not provide');
    const userFn = wat('(module (import "extism:host/user" "fetch_all" (func)) (func (export "run")))');
    expect(invalidModule(() => validateWasmModule(userFn, limits)).message).toMatch(/fetch_all/);
    const memory = wat('(module (import "env" "memory" (memory 1 2)) (func (export "run")))');
    expect(invalidModule(() => validateWasmModule(memory, limits)).message).toMatch(/imports its memory/);
    const global = wat('(module (import "env" "g" (global i32)) (func (export "run")))');
    expect(invalidModule(() => validateWasmModule(global, limits)).message).toMatch(/imports a global/);
  });

  it('accepts every Extism kernel function', () => {
    const imports = EXTISM_KERNEL_FUNCTIONS.map((f) => `(import "extism:host/env" "${f}" (func))`).join('\n');
    expect(() => validateWasmModule(wat(`(module ${imports} (func (export "run")))`), limits)).not.toThrow();
  });
});
