/**
 * Issue 17, the bundled library set: the origin platform's libraries (`@d6e-ai/<name>`: crypto-js, docx, fontkit,
 * pdf-lib, pptxgenjs, xlsx and the font mplus-1p-regular) run in our QuickJS under both names, and what they make
 * is checked from Node: the zip parts of .docx/.xlsx/.pptx, the font embedded in a PDF byte for byte.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateSync } from 'node:zlib';
import { strFromU8, unzipSync } from 'fflate';
import { PDFDict, PDFDocument, PDFName, type PDFRawStream } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import {
  bundledLibrary,
  bundledLibraryTypes,
  LibraryStore,
  libraryCatalog,
  listBundledLibraries,
  resolveLibraryName,
} from '../src/javascript/libraries.js';
import { failure, request } from './fixtures/javascript/helpers.js';

const require = createRequire(import.meta.url);
const XLSX = require('xlsx') as typeof import('xlsx');
const FONT_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'libraries', 'mplus-1p-regular.ttf');
const ORIGIN = ['crypto-js', 'docx', 'fontkit', 'pdf-lib', 'pptxgenjs', 'xlsx', 'mplus-1p-regular'];

let rt: JavascriptRuntime;
beforeAll(() => {
  rt = createJavascriptRuntime({ workers: 2 });
});
afterAll(() => rt.close());

const output = async (code: string, input: unknown = null, timeoutMs = 10_000) =>
  (await rt.run(request(code, { input, limits: { timeoutMs } }))).output;

const unzip = (base64: string) => {
  const bytes = Buffer.from(base64, 'base64');
  expect(bytes.subarray(0, 2).toString('latin1')).toBe('PK');
  return unzipSync(new Uint8Array(bytes));
};

describe('names: every library as `<name>` and as `@d6e-ai/<name>`', () => {
  it('resolves both forms with one function, and nothing else', () => {
    for (const name of [...ORIGIN, 'date-fns']) {
      expect(resolveLibraryName(name)).toBe(name);
      expect(resolveLibraryName(`@d6e-ai/${name}`)).toBe(name);
    }
    for (const spec of ['lodash', '@d6e-ai/lodash', '@d6e-ai/', '@d6e-ai/docx/shapes', 'docx/shapes', '@pdf-lib/fontkit', '@d6e-ai/@d6e-ai/docx', '@D6E-AI/docx', '']) {
      expect(resolveLibraryName(spec), spec).toBeUndefined();
    }
  });

  it('imports each origin library by both names in one run, as one module instance', async () => {
    const lines = ORIGIN.map((name, i) => `import * as a${i} from '${name}';\nimport * as b${i} from '@d6e-ai/${name}';`);
    const code = `${lines.join('\n')}\nexport default () => [${ORIGIN.map((_, i) => `a${i} === b${i} && Object.keys(a${i}).length > 0`).join(', ')}];`;
    expect(await output(code)).toEqual(ORIGIN.map(() => true));
  });

  it('refuses any other name, scoped or not, with "module not allowed: <name>"', async () => {
    for (const name of ['@d6e-ai/lodash', '@d6e-ai/docx/shapes', 'docx/shapes', '@pdf-lib/fontkit', '@d6e-ai/@d6e-ai/docx', './docx']) {
      const e = await failure(rt.run(request(`import x from '${name}';\nexport default () => x;`)));
      expect(e.kind, name).toBe('runtime');
      expect(e.message, name).toContain(`module not allowed: ${name}`);
    }
    const d = await failure(rt.run(request("await import('@d6e-ai/left-pad');\nreturn 1;")));
    expect(d.message).toContain('module not allowed: @d6e-ai/left-pad');
  });
});

describe('crypto-js', () => {
  it('SHA256 and HmacSHA256 as node:crypto computes them', async () => {
    const code = [
      "import CryptoJS from '@d6e-ai/crypto-js';",
      "export default (input) => ({ sha: CryptoJS.SHA256(input.text).toString(), b64: CryptoJS.SHA256(input.text).toString(CryptoJS.enc.Base64) });",
    ].join('\n');
    const sha = createHash('sha256').update('請求書 42').digest();
    expect(await output(code, { text: '請求書 42' })).toEqual({ sha: sha.toString('hex'), b64: sha.toString('base64') });
  });
});

describe('docx', () => {
  const make = [
    'const doc = new Document({',
    "  creator: 'STF',",
    '  sections: [{ children: [',
    "    new Paragraph({ children: [new TextRun({ text: $input.title, bold: true })] }),",
    "    new Paragraph({ children: [new TextRun('合計: ' + $input.total + ' 円')] }),",
    '    new Table({ rows: [new TableRow({ children: [new TableCell({ children: [new Paragraph("cell")] })] })] }),',
    '  ] }],',
    '});',
    'return await Packer.toBase64String(doc);',
  ].join('\n');

  const check = (base64: unknown) => {
    const parts = unzip(base64 as string);
    const xml = strFromU8(parts['word/document.xml']!);
    expect(xml).toContain('請求書');
    expect(xml).toContain('合計: 1200 円');
    expect(xml).toContain('<w:tbl>');
    expect(Object.keys(parts)).toContain('[Content_Types].xml');
  };

  it('Packer.toBase64String(new Document(…)) makes a .docx (dynamic import in the script form)', async () => {
    const code = `const { Document, Packer, Paragraph, Table, TableCell, TableRow, TextRun } = await import('@d6e-ai/docx');\n${make}`;
    check(await output(code, { title: '請求書', total: 1200 }));
  });

  it("works with the origin's static import in the script form, and in the module form", async () => {
    const names = '{ Document, Packer, Paragraph, Table, TableCell, TableRow, TextRun }';
    check(await output(`import ${names} from '@d6e-ai/docx';\n${make}`, { title: '請求書', total: 1200 }));
    const asModule = `import ${names} from 'docx';\nexport default async ($input) => {\n${make}\n};`;
    check(await output(asModule, { title: '請求書', total: 1200 }));
  });
});

describe('xlsx (SheetJS)', () => {
  it('book_new / json_to_sheet / write base64 makes a workbook Node reads back', async () => {
    const code = [
      "import * as XLSX from '@d6e-ai/xlsx';",
      'export default (input) => {',
      '  const wb = XLSX.utils.book_new();',
      "  XLSX.utils.book_append_sheet(wb, XLSX.utils.json_to_sheet(input.rows), '請求');",
      "  return XLSX.write(wb, { type: 'base64', bookType: 'xlsx' });",
      '};',
    ].join('\n');
    const rows = [
      { item: 'りんご', qty: 3, price: 120.5 },
      { item: 'pear', qty: 1, price: 99 },
    ];
    const base64 = (await output(code, { rows })) as string;
    unzip(base64);
    const wb = XLSX.read(Buffer.from(base64, 'base64'), { type: 'buffer' });
    expect(wb.SheetNames).toEqual(['請求']);
    expect(XLSX.utils.sheet_to_json(wb.Sheets[wb.SheetNames[0]!]!)).toEqual(rows);
  });

  it('reads a CSV and has a default export too', async () => {
    const code = "const XLSX = (await import('xlsx')).default;\nconst wb = XLSX.read('a,b\\n1,2', { type: 'string' });\nreturn XLSX.utils.sheet_to_json(wb.Sheets[wb.SheetNames[0]]);";
    expect(await output(code)).toEqual([{ a: 1, b: 2 }]);
  });
});

describe('pptxgenjs', () => {
  it('new PptxGenJS(); addSlide().addText(…); write({ outputType: "base64" }) makes a .pptx', async () => {
    const code = [
      "import PptxGenJS from '@d6e-ai/pptxgenjs';",
      'export default async (input) => {',
      '  const pres = new PptxGenJS();',
      "  pres.layout = 'LAYOUT_16x9';",
      '  const slide = pres.addSlide();',
      "  slide.addText(input.title, { x: 1, y: 1, fontSize: 24, color: '363636' });",
      "  slide.addTable([[{ text: 'A' }, { text: 'B' }]], { x: 1, y: 2 });",
      "  return await pres.write({ outputType: 'base64' });",
      '};',
    ].join('\n');
    const parts = unzip((await output(code, { title: '四半期報告' })) as string);
    const slide = strFromU8(parts['ppt/slides/slide1.xml']!);
    expect(slide).toContain('四半期報告');
    expect(slide).toContain('<a:tbl>');
    expect(Object.keys(parts)).toContain('ppt/presentation.xml');
  });
});

describe('the font mplus-1p-regular', () => {
  const file = readFileSync(FONT_FILE);

  it('is the TTF file as a Uint8Array, by both names, without a trace in the globals', async () => {
    const code = [
      "import a from '@d6e-ai/mplus-1p-regular';",
      "import b from 'mplus-1p-regular';",
      'export default async (input) => {',
      "  const c = (await import('@d6e-ai/mplus-1p-regular')).default;",
      '  return {',
      '    same: a === b && b === c, u8: a instanceof Uint8Array, length: a.length,',
      '    at: input.at.map((i) => a[i]),',
      "    globals: Object.getOwnPropertyNames(globalThis).filter((k) => k.startsWith('__')),",
      '  };',
      '};',
    ].join('\n');
    const at = [0, 1, 2, 3, 1000, 123_456, file.length - 1];
    expect(await output(code, { at })).toEqual({ same: true, u8: true, length: file.length, at: at.map((i) => file[i]), globals: [] });
  });

  it('pdf-lib + fontkit embed it (as on the origin: no subset) and draw 「請求書」; the PDF carries the font byte for byte', async () => {
    const code = [
      "import { PDFDocument, rgb } from '@d6e-ai/pdf-lib';",
      "import fontkit from '@d6e-ai/fontkit';",
      "import mplusFontBytes from '@d6e-ai/mplus-1p-regular';",
      'export default async () => {',
      '  const pdfDoc = await PDFDocument.create();',
      '  pdfDoc.registerFontkit(fontkit);',
      '  const font = await pdfDoc.embedFont(mplusFontBytes);',
      '  const page = pdfDoc.addPage([595, 842]);',
      "  page.drawText('請求書', { x: 50, y: 780, size: 28, font, color: rgb(0, 0, 0) });",
      "  page.drawText('合計 ¥1,200', { x: 50, y: 740, size: 14, font });",
      '  return { pdf: await pdfDoc.saveAsBase64(), width: font.widthOfTextAtSize("請求書", 28) };',
      '};',
    ].join('\n');
    // The default memory limit; the time limit of the service (STF_TIMEOUT_MS, 10 s) with room for a busy machine.
    const r = await rt.run(request(code, { limits: { timeoutMs: 60_000 } }));
    const { pdf, width } = r.output as { pdf: string; width: number };
    expect(width).toBeCloseTo(84, 0); // three full-width glyphs of 1000 units at 28 pt
    const bytes = Buffer.from(pdf, 'base64');
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const doc = await PDFDocument.load(bytes);
    expect(doc.getPageCount()).toBe(1);
    // The font program (FontFile2) is the TTF as it is, and ToUnicode maps the glyphs drawn back to 請, 求, 書.
    const dicts = doc.context.enumerateIndirectObjects().map(([, o]) => o);
    const stream = (ref: unknown) => doc.context.lookup(ref as never) as PDFRawStream;
    const descriptor = dicts.find((o) => o instanceof PDFDict && o.get(PDFName.of('FontFile2'))) as PDFDict;
    expect(descriptor.get(PDFName.of('FontName'))?.toString()).toMatch(/MPLUS1p-Regular/);
    expect(inflateSync(stream(descriptor.get(PDFName.of('FontFile2'))).contents).equals(file)).toBe(true);
    const font = dicts.find((o) => o instanceof PDFDict && o.get(PDFName.of('ToUnicode'))) as PDFDict;
    const cmap = inflateSync(stream(font.get(PDFName.of('ToUnicode'))).contents).toString('latin1').toLowerCase();
    for (const ch of '請求書合計') expect(cmap).toContain(`<${ch.codePointAt(0)!.toString(16).padStart(4, '0')}>`);
    console.log(`pdf-lib + fontkit + M+ font (full embed, default memory limit): ${r.duration_ms} ms, ${bytes.length} bytes`);
  }, 90_000);
});

describe('lazy loading', () => {
  it('a worker reads a bundle when a run first imports it, then keeps it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stf-libs-'));
    try {
      mkdirSync(dir, { recursive: true });
      const entry = (name: string, format: 'module' | 'bytes', module: string) => ({
        name, aliases: [`@d6e-ai/${name}`], package: name, version: '1.0.0', description: name, license: 'MIT', format, module, types: `${name}.d.ts`,
      });
      const store = new LibraryStore({ catalog: { dir, entries: [entry('lib', 'module', 'lib.js'), entry('font', 'bytes', 'font.bin')] } });
      // Nothing is read when the store is made: the files do not even exist yet.
      writeFileSync(join(dir, 'lib.js'), 'export default 1;');
      writeFileSync(join(dir, 'font.bin'), Buffer.from([1, 2, 3]));
      expect(store.load('@d6e-ai/lib')).toBe('export default 1;');
      writeFileSync(join(dir, 'lib.js'), 'export default 2;');
      expect(store.load('lib')).toBe('export default 1;'); // kept, under either name
      const font = store.load('font') as { bytes: ArrayBuffer };
      expect([...new Uint8Array(font.bytes)]).toEqual([1, 2, 3]);
      expect(store.load('nope')).toBeUndefined();
      expect(store.load('lib/x')).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('libraries given to the runtime are importable under both names too', async () => {
    const own = createJavascriptRuntime({ workers: 1, libraries: { greet: 'export const hi = (n) => "hi " + n;' } });
    try {
      const code = "import { hi } from '@d6e-ai/greet';\nimport * as g from 'greet';\nexport default () => [hi('a'), g.hi === hi];";
      expect((await own.run(request(code))).output).toEqual(['hi a', true]);
      const e = await failure(own.run(request("import x from 'docx';\nexport default () => x;")));
      expect(e.message).toContain('module not allowed: docx');
    } finally {
      await own.close();
    }
  });
});

describe('list, types and bundledLibrary()', () => {
  it('lists each library once, by its bare name, with the @d6e-ai alias and its licence', () => {
    const list = listBundledLibraries();
    expect(list.map((l) => l.name)).toEqual(['pdf-lib', 'date-fns', 'crypto-js', 'docx', 'fontkit', 'pptxgenjs', 'xlsx', 'mplus-1p-regular']);
    const byName = Object.fromEntries(list.map((l) => [l.name, l]));
    for (const name of ORIGIN) expect(byName[name]!.aliases).toEqual([`@d6e-ai/${name}`]);
    expect(byName.xlsx).toMatchObject({ version: '0.18.5', license: 'Apache-2.0' });
    expect(byName.fontkit).toMatchObject({ version: '1.1.1', license: 'MIT' });
    expect(byName['mplus-1p-regular']).toMatchObject({ license: 'OFL-1.1' });
    for (const name of ['docx', 'pptxgenjs']) expect(byName[name]!.license).toBe('MIT');
    // The font's licence travels with it.
    expect(readFileSync(join(libraryCatalog().dir, 'mplus-1p-regular.LICENSE.txt'), 'utf8')).toContain('SIL OPEN FONT LICENSE Version 1.1');
  });

  it('serves the .d.ts for both names, each declaring the name asked for', () => {
    for (const name of ORIGIN) {
      const bare = bundledLibraryTypes(name)!;
      const scoped = bundledLibraryTypes(`@d6e-ai/${name}`)!;
      expect(bare, name).toContain(`declare module "${name}" {`);
      expect(scoped, name).toContain(`declare module "@d6e-ai/${name}" {`);
      expect(scoped, name).not.toMatch(new RegExp(`module "${name.replace(/[.]/g, '\\.')}[/"]`));
    }
    expect(bundledLibraryTypes('mplus-1p-regular')).toContain('const bytes: Uint8Array;\n    export default bytes;');
    expect(bundledLibraryTypes('@d6e-ai/nope')).toBeUndefined();
  });

  it('type-checks origin code against the .d.ts texts of both forms, loaded together (tsc)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stf-origin-types-'));
    try {
      const files: string[] = [];
      for (const name of [...ORIGIN, 'date-fns']) {
        for (const [i, spec] of [name, `@d6e-ai/${name}`].entries()) {
          const file = `${name}.${i}.d.ts`;
          writeFileSync(join(dir, file), bundledLibraryTypes(spec)!);
          files.push(file);
        }
      }
      const good = [
        "import { PDFDocument, rgb } from '@d6e-ai/pdf-lib';",
        "import fontkit from '@d6e-ai/fontkit';",
        "import mplus from '@d6e-ai/mplus-1p-regular';",
        "import { Document, Packer, Paragraph, TextRun } from '@d6e-ai/docx';",
        "import * as XLSX from '@d6e-ai/xlsx';",
        "import XLSX2 from 'xlsx';",
        "import PptxGenJS from '@d6e-ai/pptxgenjs';",
        "import CryptoJS from 'crypto-js';",
        'export default async () => {',
        '  const pdf = await PDFDocument.create();',
        '  pdf.registerFontkit(fontkit);',
        '  const font = await pdf.embedFont(mplus);',
        "  pdf.addPage().drawText('請求書', { font, color: rgb(0, 0, 0) });",
        "  const doc = new Document({ sections: [{ children: [new Paragraph({ children: [new TextRun('x')] })] }] });",
        '  const docx: string = await Packer.toBase64String(doc);',
        '  const wb = XLSX.utils.book_new();',
        "  XLSX.utils.book_append_sheet(wb, XLSX2.utils.json_to_sheet([{ a: 1 }]), 'S');",
        "  const xlsx: string = XLSX.write(wb, { type: 'base64', bookType: 'xlsx' });",
        '  const pres = new PptxGenJS();',
        "  pres.addSlide().addText('Hello', { x: 1, y: 1 });",
        "  const pptx = (await pres.write({ outputType: 'base64' })) as string;",
        '  const bytes: Uint8Array = mplus;',
        "  return { docx, xlsx, pptx, n: bytes.length, glyphs: fontkit.create(mplus).numGlyphs, sha: CryptoJS.SHA256('x').toString() };",
        '};',
      ].join('\n');
      writeFileSync(join(dir, 'good.ts'), good);
      const options = { strict: true, noEmit: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', lib: ['es2022'], types: [] };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files: [...files, 'good.ts'] }));
      const bin = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
      const r = spawnSync(process.execPath, [bin, '-p', dir], { encoding: 'utf8', timeout: 60_000 });
      expect(`${r.stdout}${r.stderr}`).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('bundledLibrary(name) gives name, version, code and types for either form', () => {
    const docx = bundledLibrary('@d6e-ai/docx')!;
    expect(docx).toMatchObject({ name: 'docx', version: '9.15.2', format: 'module' });
    expect(docx.code).toBe(bundledLibrary('docx')!.code);
    expect(docx.types).toContain('declare module "@d6e-ai/docx" {');
    const font = bundledLibrary('mplus-1p-regular')!;
    expect(font.format).toBe('bytes');
    expect(Buffer.from(font.code, 'base64').equals(readFileSync(FONT_FILE))).toBe(true);
    expect(bundledLibrary('lodash')).toBeUndefined();
  });
});

describe('what an import copies into the run counts against its memory', () => {
  it('refuses the font in a run whose memory limit is smaller than it, and the worker carries on', async () => {
    const e = await failure(rt.run(request("import font from '@d6e-ai/mplus-1p-regular';\nreturn font.length;", { limits: { memoryBytes: 1024 * 1024 } })));
    expect(e.message).toMatch(/import mplus-1p-regular: the result is \d+ bytes, more than the run's memory limit/);
    expect((await rt.run(request("import font from '@d6e-ai/mplus-1p-regular';\nreturn font.length;"))).output).toBeGreaterThan(1_000_000);
  });
});
