/**
 * The sandbox's native helpers for the bundled libraries (prelude.ts NATIVE_DEFLATE / NATIVE_BASE64, engine.ts):
 * a zlib deflate and a base64 encoder run by the host, reachable under Symbol.for keys of the global object. What
 * they make is checked from Node; what they refuse fails the run as memory would; code that lists the globals sees
 * nothing new; and the bundles use them in the sandbox and their own JavaScript anywhere else.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deflateSync, inflateSync } from 'node:zlib';
import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInEngine } from '../src/javascript/engine.js';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { NATIVE_BASE64, NATIVE_DEFLATE } from '../src/javascript/prelude.js';
import { compileQuickJS, heapBytes, heapMaximumFor, newBoundedQuickJS } from '../src/javascript/quickjs-module.js';
import { engineHost, engineJob, failure, request } from './fixtures/javascript/helpers.js';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'libraries');

/** Deterministic bytes, the same in Node and in the guest: some text, then noise (xorshift). */
const GEN = `function gen(n) {
  const out = new Uint8Array(n);
  let x = 2463534242;
  for (let i = 0; i < n; i++) {
    if (i < n / 2) { out[i] = 'invoice 請求書 '.charCodeAt(i % 12) & 255; continue; }
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    out[i] = x & 255;
  }
  return out;
}`;
const gen = new Function(`${GEN}\nreturn gen;`)() as (n: number) => Uint8Array;

const DEFLATE = `globalThis[Symbol.for('${NATIVE_DEFLATE}')]`;
const BASE64 = `globalThis[Symbol.for('${NATIVE_BASE64}')]`;

/** Incompressible bytes fast in QuickJS: 64 KiB of noise, repeated (deflate's window is 32 KiB). */
const NOISE = `function noise(n) {
  const block = new Uint32Array(16384);
  let x = 88675123;
  for (let i = 0; i < block.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; block[i] = x; }
  const bytes = new Uint8Array(block.buffer);
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += bytes.length) out.set(at + bytes.length <= n ? bytes : bytes.subarray(0, n - at), at);
  return out;
}`;

let rt: JavascriptRuntime;
beforeAll(() => {
  rt = createJavascriptRuntime({ workers: 1 });
});
afterAll(() => rt.close());

const run = async (code: string, limits = {}) => (await rt.run(request(code, { limits }))).output;

describe('deflate', () => {
  it('makes zlib data that Node inflates back to the input, for each kind of input and level', async () => {
    const code = `${GEN}
const deflate = ${DEFLATE};
const base64 = ${BASE64};
const data = gen(200000);
const cases = {
  u8: deflate(data),
  view: deflate(data.subarray(1000, 150000)),
  dataView: deflate(new DataView(data.buffer, 7, 999)),
  buffer: deflate(data.buffer),
  int16: deflate(new Int16Array(data.buffer, 2, 500)),
  empty: deflate(new Uint8Array(0)),
  level0: deflate(data, 0),
  level9: deflate(data, 9),
};
const out = {};
for (const k in cases) out[k] = { u8: cases[k] instanceof Uint8Array, b64: base64(cases[k]) };
return out;`;
    const out = (await run(code)) as Record<string, { u8: boolean; b64: string }>;
    const data = gen(200000);
    const expected: Record<string, Uint8Array> = {
      u8: data,
      view: data.subarray(1000, 150000),
      dataView: data.subarray(7, 1006),
      buffer: data,
      int16: data.subarray(2, 1002),
      empty: new Uint8Array(0),
      level0: data,
      level9: data,
    };
    for (const [k, bytes] of Object.entries(expected)) {
      expect(out[k]!.u8, k).toBe(true);
      const z = Buffer.from(out[k]!.b64, 'base64');
      expect(inflateSync(z).equals(bytes), k).toBe(true);
    }
    // The zlib header: the default level (6), level 0 and level 9 say so in FLEVEL.
    const header = (k: string) => Buffer.from(out[k]!.b64, 'base64').subarray(0, 2).toString('hex');
    expect([header('u8'), header('level0'), header('level9')]).toEqual(['789c', '7801', '78da']);
    // Level 6 compresses as Node's own deflate does.
    expect(Buffer.from(out.u8!.b64, 'base64').equals(deflateSync(data))).toBe(true);
  });

  it('refuses what is not bytes, with a TypeError', async () => {
    const code = `const deflate = ${DEFLATE};
const base64 = ${BASE64};
const fake = Object.create(Uint8Array.prototype);
const forged = { buffer: new ArrayBuffer(8), byteOffset: 0, byteLength: 1e9 };
return ['abc', 123, null, fake, forged, [1, 2, 3]].flatMap((x) => [deflate, base64].map((f) => {
  try { f(x); return 'accepted'; } catch (e) { return e.name + ': ' + e.message; }
}));`;
    const out = (await run(code)) as string[];
    expect(out).toHaveLength(12);
    for (const line of out) expect(line).toMatch(/^TypeError: (deflate|base64) expects a Uint8Array \(or another ArrayBuffer view\) or an ArrayBuffer$/);
  });

  it('a huge input just fails: kind memory, catchable as out of memory, and the next run works', async () => {
    // A generous time limit: the noise is made in the guest, which on a busy machine takes seconds; what fails must be memory.
    const limits = { memoryBytes: 8 * 1024 * 1024, timeoutMs: 60_000 };
    const input = `${NOISE}\nconst data = noise(Math.floor(7.9 * 1024 * 1024));`;
    const e = await failure(rt.run(request(`${input}\nreturn ${DEFLATE}(data).length;`, { limits })));
    expect(e.kind).toBe('memory');
    expect(e.message).toBe('The STF used more memory than its limit (8388608 bytes)');
    const caught = await run(`${input}\ntry { ${DEFLATE}(data); return 'deflated'; } catch (e) { return e.name + ': ' + e.message; }`, limits);
    expect(caught).toBe('InternalError: out of memory');
    expect(await run(`return ${BASE64}(new Uint8Array([1, 2, 3]));`)).toBe('AQID');
  });
});

describe('base64', () => {
  it("is Node's base64 of the bytes, for every length mod 3 and for views", async () => {
    const code = `${GEN}
const base64 = ${BASE64};
const data = gen(3000);
return {
  short: [0, 1, 2, 3, 4, 5].map((n) => base64(data.subarray(0, n))),
  view: base64(data.subarray(11, 2999)),
  buffer: base64(data.buffer),
  dataView: base64(new DataView(data.buffer, 5, 100)),
};`;
    const data = Buffer.from(gen(3000));
    expect(await run(code)).toEqual({
      short: [0, 1, 2, 3, 4, 5].map((n) => data.subarray(0, n).toString('base64')),
      view: data.subarray(11, 2999).toString('base64'),
      buffer: data.toString('base64'),
      dataView: data.subarray(5, 105).toString('base64'),
    });
  });
});

describe('the helpers and the STF', () => {
  it('adds no global names: Object.keys, for…in and getOwnPropertyNames show nothing new', async () => {
    // The globals of a bare QuickJS context, for comparison.
    const mod = await newBoundedQuickJS(64 * 1024 * 1024, compileQuickJS());
    const bare = mod.newContext();
    const names = bare.unwrapResult(bare.evalCode('JSON.stringify(Object.getOwnPropertyNames(globalThis))'));
    const bareNames = JSON.parse(bare.getString(names)) as string[];
    names.dispose();
    bare.dispose();

    const code = `const forIn = []; for (const k in globalThis) forIn.push(k);
const describe = (s) => { const d = Object.getOwnPropertyDescriptor(globalThis, s); return [Symbol.keyFor(s), typeof d.value, d.enumerable, d.writable, d.configurable]; };
return {
  keys: Object.keys(globalThis), forIn, names: Object.getOwnPropertyNames(globalThis),
  symbols: Object.getOwnPropertySymbols(globalThis).filter((s) => Symbol.keyFor(s) !== undefined).map(describe),
  json: JSON.stringify(Object.assign({}, globalThis)),
};`;
    const out = (await run(code)) as { keys: string[]; forIn: string[]; names: string[]; symbols: unknown[]; json: string };
    expect(out.keys).toEqual([]);
    expect(out.forIn).toEqual([]);
    expect(out.json).toBe('{}');
    // Only the documented globals of the sandbox (docs/stfs.md), none for the helpers.
    const added = out.names.filter((n) => !bareNames.includes(n)).sort();
    expect(added).toEqual(['$caller', '$env', '$input', '$sources', 'TextDecoder', 'TextEncoder', 'atob', 'btoa', 'console', 'crypto', 'sql'].sort());
    expect(out.symbols).toEqual([
      [NATIVE_DEFLATE, 'function', false, false, false],
      [NATIVE_BASE64, 'function', false, false, false],
    ]);
  });

  // (QuickJS lets Object.defineProperty give any property of the global object a new value, even a non-configurable
  // one such as `undefined`: an STF set on it can replace them for its own run, and its own libraries.)
  it('an STF cannot assign or delete them; names such as deflate and base64 stay free for its own use', async () => {
    const code = `const key = Symbol.for('${NATIVE_DEFLATE}');
const original = globalThis[key];
const tries = [
  () => { globalThis[key] = () => 'mine'; },
  () => { delete globalThis[key]; },
].map((f) => { try { f(); return 'allowed'; } catch (e) { return e.name; } });
globalThis.deflate = 'mine'; globalThis.base64 = 'mine'; globalThis.hostDeflate = 'mine';
return { tries, same: globalThis[key] === original, names: [deflate, base64, hostDeflate], zlib: typeof zlib };`;
    expect(await run(`export default () => { ${code} };`)).toEqual({
      tries: ['TypeError', 'TypeError'],
      same: true,
      names: ['mine', 'mine', 'mine'],
      zlib: 'undefined',
    });
  });

  it('a run that does not use them is unaffected: same results, no engine reset', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await run('let t = 0; for (const x of [1, 2, 3]) t += x; return { t, d: typeof deflate };')).toEqual({ t: 6, d: 'undefined' });
      expect(await run('export default async (input) => ({ n: input });')).toEqual({ n: null });
    }
    expect(rt.stats().engineResets).toBe(0);
  });
});

describe('bounds (engine)', () => {
  const host = engineHost;
  const job = (code: string, heapLimitBytes: number) => engineJob(code, { heapLimitBytes, timeoutMs: 5000 });

  it('refuses data the WASM heap has no room for before its backstop, with QuickJS\'s "out of memory"', async () => {
    const mod = await newBoundedQuickJS(heapMaximumFor(64 * 1024 * 1024), compileQuickJS());
    // The heap's backstop 1 MiB above its size now: a 3 MiB buffer still fits the heap as it is (QuickJS allocates
    // it in free space), but the host's copy of it would pass the backstop.
    const limit = heapBytes(mod) + 1024 * 1024;
    for (const helper of [DEFLATE, BASE64]) {
      const caught = runInEngine(mod, job(`const a = new Uint8Array(3 << 20);\ntry { ${helper}(a); return 'done'; } catch (e) { return [e.name, e.message]; }`, limit), host(mod));
      expect(caught.outcome).toEqual({ ok: true, output: JSON.stringify(['InternalError', 'out of memory']) });
      const thrown = runInEngine(mod, job(`return ${helper}(new Uint8Array(3 << 20)).length;`, limit), host(mod));
      expect(thrown.outcome).toMatchObject({ ok: false, kind: 'memory' });
      expect(thrown.poisoned).toBe(false);
    }
    // The same with room to spare works.
    const fine = runInEngine(mod, job(`return ${DEFLATE}(new Uint8Array(3 << 20)).length;`, 64 * 1024 * 1024 + 16 * 1024 * 1024), host(mod));
    expect(fine.outcome).toMatchObject({ ok: true });
  });
});

describe('the bundles', () => {
  it('pdf-lib uses the helpers where they are, and its own deflate and base64 elsewhere (here: Node)', async () => {
    const lib = (await import(pathToFileURL(join(DIST, 'pdf-lib.js')).href)) as typeof import('pdf-lib');
    const make = async () => {
      const doc = await lib.PDFDocument.create();
      const font = await doc.embedFont(lib.StandardFonts.Helvetica);
      doc.addPage([200, 200]).drawText('Invoice 42', { x: 20, y: 100, size: 12, font });
      return doc.saveAsBase64();
    };
    const check = async (b64: string) => {
      const doc = await PDFDocument.load(Buffer.from(b64, 'base64'));
      expect(doc.getPageCount()).toBe(1);
    };
    // No helpers in Node: fflate and pdf-lib's own base64.
    await check(await make());
    const calls = { deflate: 0, base64: 0 };
    const g = globalThis as Record<symbol, unknown>;
    const dk = Symbol.for(NATIVE_DEFLATE);
    const bk = Symbol.for(NATIVE_BASE64);
    Object.defineProperty(g, dk, {
      configurable: true,
      value: (data: Uint8Array, level: number) => {
        calls.deflate++;
        return new Uint8Array(deflateSync(data, { level }));
      },
    });
    Object.defineProperty(g, bk, {
      configurable: true,
      value: (data: Uint8Array) => {
        calls.base64++;
        return Buffer.from(data).toString('base64');
      },
    });
    try {
      await check(await make());
      expect(calls.deflate).toBeGreaterThan(0);
      expect(calls.base64).toBe(1);
    } finally {
      delete g[dk];
      delete g[bk];
    }
  });
});
