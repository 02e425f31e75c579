import { spawnSync } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import {
  BUNDLED_LIBRARIES,
  bundledLibrarySources,
  bundledLibraryTypes,
  listBundledLibraries,
} from '../src/javascript/libraries.js';
import { failure, request } from './fixtures/javascript/helpers.js';

const require = createRequire(import.meta.url);
const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Every bundled library and the npm package it is made from (javascript-origin-libraries.test.ts: the new ones). */
const PACKAGES: Record<string, string> = {
  'pdf-lib': 'pdf-lib',
  'date-fns': 'date-fns',
  'crypto-js': 'crypto-js',
  docx: 'docx',
  fontkit: '@pdf-lib/fontkit',
  pptxgenjs: 'pptxgenjs',
  xlsx: 'xlsx',
  'mplus-1p-regular': '@expo-google-fonts/m-plus-1p',
};
const NAMES = Object.keys(PACKAGES);
/** The ES module libraries (the font is bytes). */
const MODULES = NAMES.filter((n) => n !== 'mplus-1p-regular');

let rt: JavascriptRuntime;
beforeAll(() => {
  rt = createJavascriptRuntime({ workers: 2 });
});
afterAll(() => rt.close());

const output = async (code: string, input: unknown = null) => (await rt.run(request(code, { input }))).output;

describe('bundled libraries: date-fns', () => {
  it('imports by package name in the module form', async () => {
    const code = [
      "import { format, addDays, parseISO, differenceInCalendarDays } from 'date-fns';",
      'export default (input) => ({',
      "  next: format(addDays(parseISO(input.day), input.days), 'yyyy-MM-dd EEEE'),",
      "  gap: differenceInCalendarDays(parseISO('2024-03-01'), parseISO('2024-02-01')),",
      '});',
    ].join('\n');
    expect(await output(code, { day: '2024-02-28', days: 2 })).toEqual({ next: '2024-03-01 Friday', gap: 29 });
  });

  it('imports with a dynamic import() in the script form', async () => {
    const code = "const { format, addDays } = await import('date-fns');\nreturn format(addDays(new Date(2024, 11, 31), 1), 'dd.MM.yyyy');";
    expect(await output(code)).toBe('01.01.2025');
  });
});

describe('bundled libraries: crypto-js', () => {
  const sha = createHash('sha256').update('hello world').digest('hex');
  const hmac = createHmac('sha256', 'secret key').update('payload').digest('hex');

  it('hashes like node:crypto, through the default export and named exports', async () => {
    const code = [
      "import CryptoJS, { SHA256, HmacSHA256, enc } from 'crypto-js';",
      'export default () => ({',
      "  sha: CryptoJS.SHA256('hello world').toString(CryptoJS.enc.Hex),",
      "  hmac: HmacSHA256('payload', 'secret key').toString(enc.Hex),",
      "  named: SHA256('hello world').toString(),",
      '});',
    ].join('\n');
    expect(await output(code)).toEqual({ sha, hmac, named: sha });
  });

  it('works in the script form and encrypts with an explicit key and iv', async () => {
    const code = [
      "const CryptoJS = (await import('crypto-js')).default;",
      "const key = CryptoJS.enc.Hex.parse('000102030405060708090a0b0c0d0e0f');",
      "const iv = CryptoJS.enc.Hex.parse('0f0e0d0c0b0a09080706050403020100');",
      "const ct = CryptoJS.AES.encrypt('plain text', key, { iv }).toString();",
      "return { hmac: CryptoJS.HmacSHA256('payload', 'secret key').toString(), ct, pt: CryptoJS.AES.decrypt(ct, key, { iv }).toString(CryptoJS.enc.Utf8) };",
    ].join('\n');
    const r = (await output(code)) as { hmac: string; ct: string; pt: string };
    expect(r.hmac).toBe(hmac);
    expect(r.pt).toBe('plain text');
    expect(r.ct).toMatch(/^[A-Za-z0-9+/]+=*$/);
  });
});

describe('bundled libraries: pdf-lib', () => {
  it('creates a PDF within the default limits', async () => {
    const code = [
      "import { PDFDocument, StandardFonts, rgb } from 'pdf-lib';",
      'export default async (input) => {',
      '  const doc = await PDFDocument.create();',
      '  doc.setTitle(input.title);',
      '  const font = await doc.embedFont(StandardFonts.Helvetica);',
      '  const page = doc.addPage([595, 842]);',
      '  page.drawText(input.title, { x: 50, y: 780, size: 24, font, color: rgb(0, 0, 0.5) });',
      '  const bytes = await doc.save();',
      '  return { length: bytes.length, base64: await doc.saveAsBase64() };',
      '};',
    ].join('\n');
    const r = (await output(code, { title: 'Invoice 42' })) as { length: number; base64: string };
    const bytes = Buffer.from(r.base64, 'base64');
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(r.length).toBeGreaterThan(500);
    const doc = await PDFDocument.load(bytes);
    expect(doc.getPageCount()).toBe(1);
    expect(doc.getTitle()).toBe('Invoice 42');
  });

  it('saves documents of more than 50 objects (save() yields with setTimeout, which QuickJS lacks)', async () => {
    const code = [
      "const { PDFDocument } = await import('pdf-lib');",
      'const doc = await PDFDocument.create();',
      'for (let i = 0; i < 60; i++) doc.addPage();',
      'const again = await PDFDocument.load(await doc.save());',
      'return { pages: again.getPageCount(), setTimeout: typeof setTimeout };',
    ].join('\n');
    // The bundle's setTimeout stand-in stays inside the bundle: the guest's globals are unchanged.
    expect(await output(code)).toEqual({ pages: 60, setTimeout: 'undefined' });
  });
});

describe('bundled libraries: what is refused', () => {
  it('refuses other modules, subpaths of the libraries and names that are not exported', async () => {
    for (const name of ['lodash', 'date-fns/format', 'pdf-lib/cjs/index', 'crypto-js/sha256', 'node:crypto']) {
      const e = await failure(rt.run(request(`import x from '${name}';\nexport default () => x;`)));
      expect(e.kind, name).toBe('runtime');
      expect(e.message, name).toContain(`module not allowed: ${name}`);
    }
    const d = await failure(rt.run(request("await import('left-pad');\nreturn 1;")));
    expect(d.message).toContain('module not allowed: left-pad');
    const missing = await failure(rt.run(request("import { nope } from 'date-fns';\nexport default () => nope;")));
    expect(missing.message).toContain("Could not find export 'nope'");
  });

  it('has a secure random source: crypto.getRandomValues, randomUUID, and crypto-js passphrase AES', async () => {
    const out = (await output(
      [
        "const C = (await import('crypto-js')).default;",
        'const a = C.lib.WordArray.random(16).toString();',
        'const b = C.lib.WordArray.random(16).toString();',
        "const ct = C.AES.encrypt('attack at dawn', 'passphrase').toString();",
        'const bytes = crypto.getRandomValues(new Uint32Array(8));',
        'let floatRefused = false;',
        'try { crypto.getRandomValues(new Float64Array(2)); } catch (e) { floatRefused = e instanceof TypeError; }',
        "return { a, b, pt: C.AES.decrypt(ct, 'passphrase').toString(C.enc.Utf8), distinct: new Set(bytes).size, uuid: crypto.randomUUID(), floatRefused };",
      ].join('\n'),
    )) as Record<string, unknown>;
    expect(out.a).toMatch(/^[0-9a-f]{32}$/);
    expect(out.a).not.toBe(out.b);
    expect(out.pt).toBe('attack at dawn');
    expect(out.distinct).toBeGreaterThan(6);
    expect(out.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(out.floatRefused).toBe(true);
  });
});

describe('bundled libraries: list and types', () => {
  it('lists each library with the version of its package', () => {
    const list = listBundledLibraries();
    expect(list.map((l) => l.name)).toEqual(NAMES);
    for (const lib of list) {
      // node_modules/<package>/package.json directly: some packages (docx) do not export it
      const pkg = JSON.parse(readFileSync(join(PACKAGE_DIR, 'node_modules', PACKAGES[lib.name]!, 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(lib.version, lib.name).toBe(pkg.version);
      expect(lib.description.length, lib.name).toBeGreaterThan(10);
      expect(lib.aliases, lib.name).toEqual([`@d6e-ai/${lib.name}`]);
      expect(lib.license, lib.name).toMatch(/^(?:MIT|Apache-2\.0|OFL-1\.1)$/);
      expect(Object.keys(lib).sort()).toEqual(['aliases', 'description', 'license', 'name', 'version']);
    }
  });

  it('serves the ES module sources, also through BUNDLED_LIBRARIES', () => {
    const sources = bundledLibrarySources();
    expect(Object.keys(sources)).toEqual(MODULES);
    expect(Object.keys(BUNDLED_LIBRARIES)).toEqual(MODULES);
    expect('pdf-lib' in BUNDLED_LIBRARIES).toBe(true);
    expect(BUNDLED_LIBRARIES['date-fns']).toBe(sources['date-fns']);
    expect(BUNDLED_LIBRARIES.lodash).toBeUndefined();
    expect(sources['date-fns']).toMatch(/\bexport\s*\{/);
  });

  it('gives a .d.ts text per library', () => {
    const pdf = bundledLibraryTypes('pdf-lib')!;
    expect(pdf).toContain('declare module "pdf-lib" {');
    expect(pdf).toMatch(/export (?:default )?class PDFDocument\b/);
    const dates = bundledLibraryTypes('date-fns')!;
    expect(dates).toContain('declare module "date-fns" {');
    expect(dates).toMatch(/export function format\b/);
    const crypto = bundledLibraryTypes('crypto-js')!;
    expect(crypto).toContain('declare module "crypto-js" {');
    expect(crypto).toContain('export import SHA256 = CryptoJS.SHA256;');
    for (const text of NAMES.map((n) => bundledLibraryTypes(n)!)) {
      // relative imports are rewritten to module names
      expect(text).not.toMatch(/^\s*(?:(?:import|export)\b[^\n]*|\}\s*)from ["']\.\.?\//m);
      expect(text).not.toMatch(/\bimport\(["']\.\.?\//);
      expect(text).not.toMatch(/^\s*(?:export\s+)?declare\s+(?!module\b)/m); // no `declare` inside ambient modules
    }
    expect(bundledLibraryTypes('lodash')).toBeUndefined();
  });

  it('type-checks code that uses the libraries against the .d.ts texts alone (tsc)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stf-lib-types-'));
    try {
      for (const name of NAMES) writeFileSync(join(dir, `${name}.d.ts`), bundledLibraryTypes(name)!);
      writeFileSync(
        join(dir, 'good.ts'),
        [
          "import { PDFDocument, StandardFonts, rgb, type PDFFont } from 'pdf-lib';",
          "import { format, addDays, type Locale } from 'date-fns';",
          "import CryptoJS, { HmacSHA256, enc, lib } from 'crypto-js';",
          'export default async (input: { n: number }) => {',
          '  const doc = await PDFDocument.create();',
          '  const font: PDFFont = await doc.embedFont(StandardFonts.Helvetica);',
          "  doc.addPage().drawText('x', { font, color: rgb(0, 0, 0) });",
          '  const bytes: Uint8Array = await doc.save();',
          "  const day: string = format(addDays(new Date(0), input.n), 'yyyy-MM-dd');",
          '  const locale: Locale | undefined = undefined;',
          "  const mac: lib.WordArray = HmacSHA256('m', 'k');",
          "  const sha: CryptoJS.lib.WordArray = CryptoJS.SHA256('x');",
          '  return { n: bytes.length, day, locale, mac: mac.toString(enc.Hex), sha: sha.toString() };',
          '};',
        ].join('\n'),
      );
      writeFileSync(
        join(dir, 'bad.ts'),
        [
          "import { PDFDocument } from 'pdf-lib';",
          "import { format } from 'date-fns';",
          "import CryptoJS from 'crypto-js';",
          "export const a: number = format(new Date(), 'x');",
          'export const b = PDFDocument.nope;',
          "export const c = CryptoJS.SHA999('x');",
          "export const d = CryptoJS.SHA256('x');",
        ].join('\n'),
      );
      const tsc = (files: string[]) => {
        const options = { strict: true, noEmit: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', lib: ['es2022'], types: [] };
        writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files }));
        const bin = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
        const r = spawnSync(process.execPath, [bin, '-p', dir], { encoding: 'utf8', timeout: 60_000 });
        return { status: r.status, out: `${r.stdout}${r.stderr}` };
      };
      const libs = NAMES.map((n) => `${n}.d.ts`);
      const good = tsc([...libs, 'good.ts']);
      expect(good.out).toBe('');
      expect(good.status).toBe(0);
      const bad = tsc([...libs, 'bad.ts']);
      expect(bad.status).not.toBe(0);
      expect(bad.out).toContain("Type 'string' is not assignable to type 'number'");
      expect(bad.out).toContain("Property 'nope' does not exist");
      expect(bad.out).toContain("Property 'SHA999' does not exist");
      expect(bad.out).not.toContain('.d.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('web globals: atob, btoa, TextEncoder, TextDecoder (as Node has them)', () => {
  const samples = ['', 'a', 'ab', 'abc', 'hello, world', 'é€😀 日本語', '\u0000\u00ff', 'x'.repeat(10_001)];

  it('encode and decode UTF-8 and base64 exactly as Node does', async () => {
    const code = [
      'const enc = new TextEncoder(); const dec = new TextDecoder();',
      'return $input.samples.map((s) => {',
      '  const bytes = enc.encode(s);',
      '  const binary = Array.from(bytes, (b) => String.fromCharCode(b)).join("");',
      '  return { bytes: Array.from(bytes).slice(0, 64), length: bytes.length, b64: btoa(binary), back: dec.decode(bytes), round: atob(btoa(binary)) === binary };',
      '});',
    ].join('\n');
    const got = (await output(code, { samples })) as { bytes: number[]; length: number; b64: string; back: string; round: boolean }[];
    samples.forEach((s, i) => {
      const bytes = Buffer.from(s, 'utf8');
      expect(got[i]).toEqual({ bytes: [...bytes].slice(0, 64), length: bytes.length, b64: bytes.toString('base64'), back: s, round: true });
    });
  });

  it('handle bad input as the web platform does', async () => {
    const code = [
      'const dec = new TextDecoder();',
      'const errorName = (f) => { try { f(); return null; } catch (e) { return e.name; } };',
      'return {',
      '  loneSurrogate: Array.from(new TextEncoder().encode("a\\ud800b")),',
      '  invalid: dec.decode(new Uint8Array([0x61, 0xff, 0xc3, 0x28, 0xe2, 0x82, 0xf0, 0x9f, 0x98, 0x80])),',
      '  bom: dec.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])),',
      '  fatal: errorName(() => new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff]))),',
      '  label: errorName(() => new TextDecoder("latin1")),',
      '  forgiving: atob(" aGVs bG8 "),',
      '  unpadded: atob("aGk"),',
      '  badBase64: errorName(() => atob("a")),',
      '  wide: errorName(() => btoa("€")),',
      '  into: new TextEncoder().encodeInto("a€b", new Uint8Array(4)),',
      '  fromBuffer: dec.decode(new Uint8Array([0x68, 0x69]).buffer),',
      '};',
    ].join('\n');
    const node = new TextDecoder();
    expect(await output(code)).toEqual({
      loneSurrogate: [...new TextEncoder().encode('a\ud800b')],
      invalid: node.decode(new Uint8Array([0x61, 0xff, 0xc3, 0x28, 0xe2, 0x82, 0xf0, 0x9f, 0x98, 0x80])),
      bom: 'a',
      fatal: 'TypeError',
      label: 'RangeError',
      forgiving: 'hello',
      unpadded: 'hi',
      badBase64: 'InvalidCharacterError',
      wide: 'InvalidCharacterError',
      into: { read: 2, written: 4 },
      fromBuffer: 'hi',
    });
  });
});
