#!/usr/bin/env node
/**
 * Builds the libraries STF code may import by package name in the `javascript` runtime
 * (docs/stfs.md#bundled-libraries):
 *
 * - dist/libraries/<file>.js    one ES module per library (esbuild: bundled, minified, es2020), served to QuickJS;
 * - dist/libraries/<file>.d.ts  an ambient declaration text per library, made from the package's own .d.ts files:
 *                               `declare module "<name>" { … }` for the entry and `declare module "<name>/__types/…"`
 *                               for every declaration file it reaches (relative imports rewritten to those names),
 *                               usable as one extra lib (Monaco's addExtraLib, a `files` entry of a tsconfig);
 * - dist/libraries/manifest.json  [{ name, version, description, license, module, types }] read by libraries.ts.
 *
 * LIBRARIES below is the one list of bundled libraries. Run after `tsc` (the package's `build` script).
 */
import { copyFileSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The Symbol.for keys of the sandbox's native helpers (src/javascript/prelude.ts NATIVE_DEFLATE, NATIVE_BASE64). */
const NATIVE_DEFLATE = 'wds.stf.deflate';
const NATIVE_BASE64 = 'wds.stf.base64';

/** An expression: whether the sandbox has the native base64. */
const HAS_NATIVE_BASE64 = `typeof globalThis[Symbol.for(${JSON.stringify(NATIVE_BASE64)})] == "function"`;
/** An expression: the native base64 of `bytes` (a Uint8Array) when the sandbox has one, else `fallback`. */
const nativeBase64Or = (bytes, fallback) =>
  `(${HAS_NATIVE_BASE64} && ${bytes} instanceof Uint8Array ? globalThis[Symbol.for(${JSON.stringify(NATIVE_BASE64)})](${bytes}) : ${fallback})`;

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_DIR = join(PACKAGE_DIR, 'dist', 'libraries');
const require = createRequire(join(PACKAGE_DIR, 'package.json'));

/**
 * The bundled libraries, each importable under its `name` and as `@d6e-ai/<name>` (the origin platform's scope;
 * libraries.ts resolveLibraryName). `package` is the npm package bundled (default: `name`); `entry` is what the
 * bundle re-exports (ES module source, resolved from this package); `types` is the declaration entry: `package`
 * (whose .d.ts files are used) and `file` inside it, `stubs` (declarations of modules the package's types import
 * but that are no package here, such as Node's `stream`), `append` (declarations added to the entry's block) and
 * `globals` (local stand-ins for the Node and DOM globals the declarations mention — Buffer, Blob — which STF code
 * has no types for; each block that gets them also gets `export {}`, so they stay private to it).
 * A library whose package is CommonJS (`cjs: true`) is exported as `default` plus one named export per own key of
 * its exports object, and an `export =` in its declarations becomes the same default and named exports. `banner`
 * is code put before the bundle (module scope, after BANNER), for globals that library needs; `replace` maps a
 * package the library imports to a module source used instead (resolved from this package); `patch` maps a file
 * of a package (`<package>/<path>`) to [search, replacement] pairs applied to its source (the build fails when a
 * search text is missing: a new release of the package must be looked at again).
 *
 * Native helpers: the sandbox puts a zlib deflate and a base64 encoder, both run by the host, on the global object
 * under Symbol.for(NATIVE_DEFLATE) and Symbol.for(NATIVE_BASE64) (src/javascript/prelude.ts). A bundle that uses
 * them looks them up when called and keeps its own JavaScript for when they are absent: the bundles are also handed
 * out as they are (workflows' `Library` sources) and must run anywhere.
 *
 * A `bytes` entry is a file served as it is: its module's default export is a Uint8Array of the file's bytes,
 * handed to QuickJS by the host (engine.ts), never decoded in the guest. `types.text` is its whole declaration.
 */
const LIBRARIES = [
  {
    name: 'pdf-lib',
    description: 'Create and modify PDF documents (PDFDocument, StandardFonts, rgb, …); with fontkit, embeds TrueType/OpenType fonts',
    entry: "export * from 'pdf-lib';",
    // pdf-lib compresses every stream with pako.deflate: here the sandbox's native deflate (NATIVE_DEFLATE: Node's
    // zlib in the host, same zlib format and level) when the bundle runs in our QuickJS, else fflate's zlibSync
    // (40 % less time than pako in QuickJS). For an embedded font that is most of the run: the 1.7 MB M+ font took
    // 4.5 s to compress with pako, 2.7 s with fflate, 0.04 s natively. pako's only other use in the bundle is
    // inflate (@pdf-lib/standard-fonts' metrics; UPNG decodes with its own).
    replace: {
      pako: [
        "import { unzlibSync, zlibSync } from 'fflate';",
        `const NATIVE = Symbol.for(${JSON.stringify(NATIVE_DEFLATE)});`,
        'export default {',
        '  deflate: (data, options) => {',
        '    const level = options && options.level !== undefined ? options.level : 6;',
        '    const native = globalThis[NATIVE];',
        "    return typeof native === 'function' ? native(data, level) : zlibSync(data, { level });",
        '  },',
        '  inflate: (data) => unzlibSync(data),', // @pdf-lib/standard-fonts: its compressed font metrics
        '};',
      ].join('\n'),
    },
    // saveAsBase64 (and every other base64 pdf-lib makes): the native base64 (NATIVE_BASE64) when there is one; the
    // library's loop takes 0.5 s in QuickJS for a 1 MB PDF.
    patch: {
      'pdf-lib/es/utils/base64.js': [
        [
          'export var encodeToBase64 = function (bytes) {',
          [
            `export var encodeToBase64 = function (bytes) { return ${nativeBase64Or('bytes', 'encodeToBase64JS(bytes)')}; };`,
            'var encodeToBase64JS = function (bytes) {',
          ].join('\n'),
        ],
      ],
    },
    types: { package: 'pdf-lib', file: 'cjs/index.d.ts' },
  },
  {
    name: 'date-fns',
    description: 'Date utility functions (format, addDays, parseISO, differenceInDays, …), en-US locale',
    entry: "export * from 'date-fns';",
    types: { package: 'date-fns', file: 'index.d.ts' },
  },
  {
    name: 'crypto-js',
    description: 'Hashes, HMACs and ciphers (SHA256, HmacSHA256, MD5, AES, enc.Hex, enc.Base64, …)',
    cjs: true,
    types: { package: '@types/crypto-js', file: 'index.d.ts', unwrapGlobal: true },
  },
  {
    name: 'docx',
    description: 'Create Word documents (.docx): Document, Paragraph, TextRun, Table, … and Packer.toBase64String',
    entry: "export * from 'docx';",
    // Packer.toBase64String: the native base64 of the zip (its own is btoa of a binary string, in QuickJS).
    patch: {
      'docx/dist/index.mjs': [['base64: (data) => btoa(binaryStringOf(data)),', `base64: (data) => ${nativeBase64Or('data', 'btoa(binaryStringOf(data))')},`]],
    },
    types: {
      package: 'docx',
      file: 'dist/index.d.ts',
      stubs: {
        // Packer.toStream(): a Node stream, which the sandbox does not have
        stream: 'export class Stream {\n    pipe<T>(destination: T, options?: { end?: boolean }): T;\n}',
      },
      globals: [
        'type Buffer = Uint8Array;',
        'interface Blob { readonly size: number; readonly type: string; arrayBuffer(): Promise<ArrayBuffer>; }',
        'namespace NodeJS { interface ReadableStream { readable: boolean; } }',
      ].join('\n'),
    },
  },
  {
    name: 'fontkit',
    package: '@pdf-lib/fontkit',
    description: "Font engine for pdf-lib's registerFontkit (the @pdf-lib/fontkit fork): default export with create()",
    entry: "import fontkit from '@pdf-lib/fontkit';\nexport default fontkit;\nexport const { create } = fontkit;",
    types: {
      package: '@pdf-lib/fontkit',
      file: 'fontkit.d.ts',
      append: 'const fontkit: { create: typeof create };\nexport default fontkit;',
    },
  },
  {
    name: 'pptxgenjs',
    description: 'Create PowerPoint presentations (.pptx): new PptxGenJS(), addSlide().addText(…), write({ outputType: "base64" })',
    entry: "export { default } from 'pptxgenjs';",
    // write({ outputType: 'base64' }) is JSZip's generateAsync({ type: 'base64' }), which joins the zip into a binary
    // string and encodes that in JavaScript: with the native base64 it joins bytes and encodes those natively. (The
    // browser build of JSZip, minified; its 3.10 text.)
    patch: {
      'jszip/dist/jszip.min.js': [
        ['case"base64":n="string"}', `case"base64":n=${HAS_NATIVE_BASE64}?"uint8array":"string"}`],
        ['case"base64":return u.encode(t);', `case"base64":return ${nativeBase64Or('t', 'u.encode(t)')};`],
      ],
    },
    types: {
      package: 'pptxgenjs',
      file: 'types/index.d.ts',
      globals: 'interface Blob { readonly size: number; readonly type: string; arrayBuffer(): Promise<ArrayBuffer>; }',
    },
  },
  {
    name: 'xlsx',
    description: 'SheetJS spreadsheets: read and write .xlsx/.csv (utils.book_new, utils.json_to_sheet, write(wb, { type: "base64" }))',
    entry: "import * as XLSX from 'xlsx';\nexport * from 'xlsx';\nexport default XLSX;",
    // write(wb, { type: 'base64' }) of a zip (CFB.write): the native base64 of its bytes.
    patch: {
      'xlsx/xlsx.mjs': [
        [
          'case "base64": return Base64_encode(typeof o == "string" ? o : a2s(o));',
          `case "base64": return ${nativeBase64Or('o', 'Base64_encode(typeof o == "string" ? o : a2s(o))')};`,
        ],
      ],
    },
    types: {
      package: 'xlsx',
      file: 'types/index.d.ts',
      append: [
        'const XLSX: {',
        '    version: typeof version; SSF: typeof SSF; CFB: typeof CFB; utils: typeof utils; stream: typeof stream;',
        '    read: typeof read; write: typeof write; writeXLSX: typeof writeXLSX; readFile: typeof readFile;',
        '    writeFile: typeof writeFile; writeFileXLSX: typeof writeFileXLSX; writeFileAsync: typeof writeFileAsync;',
        '    set_fs: typeof set_fs; set_cptable: typeof set_cptable;',
        '};',
        'export default XLSX;',
      ].join('\n'),
    },
  },
  {
    name: 'mplus-1p-regular',
    package: '@expo-google-fonts/m-plus-1p',
    description:
      'The Japanese font M PLUS 1p Regular (TrueType): default export is the font file as a Uint8Array, for pdf-lib embedFont with fontkit',
    // The npm package's own code is MIT; the font file, all that is bundled, is under the SIL Open Font License.
    license: 'OFL-1.1',
    bytes: { file: '400Regular/MPLUS1p_400Regular.ttf', licenseFile: 'LICENSE_FONT' },
    types: { text: 'const bytes: Uint8Array;\nexport default bytes;' },
  },
];

/** The origin platform's scope: every library is importable as `${ORIGIN_SCOPE}<name>` too. */
const ORIGIN_SCOPE = '@d6e-ai/';

/**
 * Globals the bundles may use that QuickJS does not have, defined in each bundle's own module scope (the guest's
 * globals stay untouched). pdf-lib's save() yields to the event loop with setTimeout(…, 0) every 50 objects; JSZip
 * (inside pptxgenjs) defers with setImmediate.
 */
const BANNER = [
  'var setTimeout = typeof globalThis.setTimeout === "function" ? globalThis.setTimeout : function (fn) {',
  '  var args = Array.prototype.slice.call(arguments, 2);',
  '  Promise.resolve().then(function () { fn.apply(undefined, args); });',
  '  return 0;',
  '};',
  'var clearTimeout = typeof globalThis.clearTimeout === "function" ? globalThis.clearTimeout : function () {};',
  'var setImmediate = typeof globalThis.setImmediate === "function" ? globalThis.setImmediate : function (fn) {',
  '  var args = Array.prototype.slice.call(arguments, 1);',
  '  Promise.resolve().then(function () { fn.apply(undefined, args); });',
  '  return 0;',
  '};',
].join('\n');

/** Identifier characters only, so a library name is a safe file name. */
const fileName = (name) => name.replace(/^@/, '').replace(/[^A-Za-z0-9._-]/g, '__');

function packageDir(name, from = PACKAGE_DIR) {
  // Walk up the node_modules directories: some packages do not export their package.json.
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    try {
      readFileSync(join(candidate, 'package.json'));
      return realpathSync(candidate); // pnpm links: a package's own dependencies sit next to its real directory
    } catch {
      // keep looking
    }
    if (dirname(dir) === dir) throw new Error(`build-libraries: cannot find the package ${name} from ${from}`);
  }
}

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

// ---- bundles

async function bundle(lib) {
  let entry = lib.entry;
  let named = [];
  if (lib.cjs) {
    const exported = require(lib.package);
    named = Object.keys(exported).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== 'default' && k !== '$$cjs');
    entry = `import $$cjs from ${JSON.stringify(lib.package)};\nexport default $$cjs;\nexport const { ${named.join(', ')} } = $$cjs;\n`;
  }
  const result = await build({
    stdin: { contents: entry, resolveDir: PACKAGE_DIR, sourcefile: `${fileName(lib.name)}-entry.js`, loader: 'js' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser', // honours the packages' "browser" fields (crypto-js: no Node `crypto`)
    target: 'es2020',
    minify: true,
    legalComments: 'inline',
    plugins: [...(lib.replace ? [replacePackages(lib.replace)] : []), ...(lib.patch ? [patchFiles(lib.patch, packageDir(lib.package))] : [])],
    banner: { js: `/* ${lib.package} ${lib.version} (${lib.license}), bundled for STF code as ${lib.name} */\n${BANNER}${lib.banner ? `\n${lib.banner}` : ''}` },
    logLevel: 'silent',
  });
  for (const w of result.warnings) console.warn(`build-libraries: ${lib.name}: ${w.text}`);
  return { code: result.outputFiles[0].text, named };
}

/** An esbuild plugin serving `replace[name]` for an import of `name`. */
function replacePackages(replace) {
  const filter = new RegExp(`^(?:${Object.keys(replace).map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`);
  return {
    name: 'stf-replace',
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'stf-replace' }));
      b.onLoad({ filter: /.*/, namespace: 'stf-replace' }, (args) => ({ contents: replace[args.path], resolveDir: PACKAGE_DIR, loader: 'js' }));
    },
  };
}

/**
 * An esbuild plugin applying `patch[<package>/<path>]` ([search, replacement] pairs) to that file of a package (the
 * package as the library's own package `from` finds it: JSZip is pptxgenjs's dependency, not ours).
 */
function patchFiles(patch, from) {
  const files = new Map(
    Object.entries(patch).map(([spec, edits]) => {
      const [scope, name, ...rest] = spec.split('/');
      const pkg = spec.startsWith('@') ? `${scope}/${name}` : scope;
      const path = spec.startsWith('@') ? rest.join('/') : [name, ...rest].join('/');
      return [join(packageDir(pkg, from), path), { spec, edits, applied: false }];
    }),
  );
  return {
    name: 'stf-patch',
    setup(b) {
      b.onLoad({ filter: /\.[cm]?js$/ }, (args) => {
        const file = files.get(realpathSync(args.path));
        if (!file) return undefined;
        let contents = readFileSync(args.path, 'utf8');
        for (const [search, replacement] of file.edits) {
          if (!contents.includes(search)) throw new Error(`build-libraries: ${file.spec} no longer contains ${JSON.stringify(search)}`);
          contents = contents.replace(search, () => replacement);
        }
        file.applied = true;
        return { contents, loader: 'js' };
      });
      b.onEnd(() => {
        for (const file of files.values()) if (!file.applied) throw new Error(`build-libraries: ${file.spec} was not part of the bundle`);
      });
    },
  };
}

// ---- declarations

/**
 * Splits TypeScript declaration text into code, comments and string literals, so rewrites never touch comments
 * (whose examples are full of `import … from 'pdf-lib'`) or the inside of strings.
 */
function segments(text) {
  const out = [];
  let i = 0;
  let start = 0;
  const push = (type, end) => {
    if (end > start) out.push({ type, text: text.slice(start, end) });
    start = end;
  };
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      push('code', i);
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
      push('comment', i);
    } else if (c === '/' && next === '*') {
      push('code', i);
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
      push('comment', i);
    } else if (c === '"' || c === "'" || c === '`') {
      push('code', i);
      i++;
      while (i < text.length && text[i] !== c) i += text[i] === '\\' ? 2 : 1;
      i++;
      push('string', i);
    } else {
      i++;
    }
  }
  push('code', text.length);
  return out;
}

/** Whether a string literal after this code is a module specifier. */
const SPECIFIER_BEFORE = /(?:\bfrom|\bimport\s*\(|\brequire\s*\(|(?:^|[;{}\n])\s*import)\s*$/;

function resolveDeclaration(specifier, fromFile) {
  if (specifier.startsWith('.')) {
    const base = resolve(dirname(fromFile), specifier.replace(/\.(?:d\.)?(?:[cm]?ts|[cm]?js)$/, ''));
    for (const candidate of [`${base}.d.ts`, join(base, 'index.d.ts')]) {
      try {
        readFileSync(candidate);
        return candidate;
      } catch {
        // next
      }
    }
    throw new Error(`build-libraries: cannot resolve ${specifier} from ${fromFile}`);
  }
  const parts = specifier.split('/');
  const pkgName = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  const subpath = parts.slice(specifier.startsWith('@') ? 2 : 1).join('/');
  const dir = packageDir(pkgName, dirname(fromFile));
  if (subpath) return resolveDeclaration(`./${subpath}`, join(dir, 'package.json'));
  const pkg = readJson(join(dir, 'package.json'));
  const types = pkg.types ?? pkg.typings;
  if (!types) throw new Error(`build-libraries: ${pkgName} (imported by ${fromFile}) has no "types"`);
  return resolveDeclaration(`./${types}`, join(dir, 'package.json'));
}

/**
 * The declarations of one library as ambient module declarations. `named` are the named exports a CommonJS
 * library's bundle adds next to its default export.
 */
function declarations(lib, named) {
  if (lib.types.text !== undefined) {
    const header = `// Type declarations of ${lib.name} ${lib.version} for STF code (${lib.package}).\n\n`;
    return `${header}declare module ${JSON.stringify(lib.name)} {\n${indent(lib.types.text.trim())}\n}\n`;
  }
  const typesDir = packageDir(lib.types.package);
  const entryFile = join(typesDir, lib.types.file);
  const names = new Map([[entryFile, lib.name]]);
  const stubs = lib.types.stubs ?? {};
  const moduleName = (file) => {
    let name = names.get(file);
    if (!name && file.startsWith('stub:')) {
      // A module the types import that is no package here (Node's `stream`): its stub declarations.
      name = `${lib.name}/__types/node_modules/${file.slice('stub:'.length)}`;
      names.set(file, name);
    }
    if (!name) {
      // Files of other packages (pdf-lib's @pdf-lib/standard-fonts) go under __types/node_modules/<package>/.
      const owner = packageOf(file);
      const rel = file.startsWith(typesDir + sep) ? relative(typesDir, file) : join('node_modules', owner.name, relative(owner.dir, file));
      name = `${lib.name}/__types/${rel.split(sep).join('/').replace(/\.d\.ts$/, '')}`;
      names.set(file, name);
    }
    return name;
  };
  const blocks = [];
  const queue = [entryFile];
  const seen = new Set(queue);
  while (queue.length) {
    const file = queue.shift();
    let body = '';
    const text = file.startsWith('stub:') ? stubs[file.slice('stub:'.length)] : readFileSync(file, 'utf8');
    for (const seg of segments(text)) {
      if (seg.type === 'string' && SPECIFIER_BEFORE.test(body.slice(-200))) {
        const specifier = seg.text.slice(1, -1);
        const target = Object.hasOwn(stubs, specifier) ? `stub:${specifier}` : resolveDeclaration(specifier, file);
        if (!seen.has(target)) {
          seen.add(target);
          queue.push(target);
        }
        body += JSON.stringify(moduleName(target));
      } else if (seg.type === 'comment' && /^\/\/(?:\/\s*<reference\b|# sourceMappingURL=)/.test(seg.text)) {
        // triple-slash references and source maps have no meaning inside the bundle
      } else if (seg.type === 'code') {
        if (/^declare\s+module\b/m.test(seg.text)) throw new Error(`build-libraries: ${file} augments a module`);
        // `export as namespace X` (a UMD global) has no meaning inside a module declaration
        body += seg.text
          .replace(/^(export\s+)?(default\s+)?declare\s+(?!global\b)/gm, '$1$2')
          .replace(/^export\s+as\s+namespace\s+[\w$]+;?[ \t]*$/gm, '');
      } else {
        body += seg.text;
      }
    }
    if (lib.types.unwrapGlobal) body = unwrapGlobal(body, file);
    if (file === entryFile && named.length) body = exportEquals(body, named, file);
    if (file === entryFile && lib.types.append) body = `${body.trim()}\n\n${lib.types.append}`;
    if (lib.types.globals && !file.startsWith('stub:')) body = `${lib.types.globals}\nexport {};\n\n${body.trim()}`;
    blocks.push(`declare module ${JSON.stringify(moduleName(file))} {\n${indent(body.trim())}\n}\n`);
  }
  const header = [
    `// Type declarations of ${lib.name} ${lib.version} for STF code: import { … } from ${JSON.stringify(lib.name)}.`,
    `// Generated from the declarations of ${lib.types.package} by packages/stf-runtime/scripts/build-libraries.mjs.`,
    `// Only ${JSON.stringify(lib.name)} itself can be imported; the "${lib.name}/__types/…" modules exist for the types.`,
    '',
    '',
  ];
  return header.join('\n') + blocks.join('\n');
}

/** The package (name and directory) a file of node_modules belongs to. */
function packageOf(file) {
  const parts = file.split(sep);
  const at = parts.lastIndexOf('node_modules');
  if (at === -1) throw new Error(`build-libraries: ${file} is not inside a package`);
  const length = parts[at + 1].startsWith('@') ? 2 : 1;
  return { name: parts.slice(at + 1, at + 1 + length).join('/'), dir: parts.slice(0, at + 1 + length).join(sep) };
}

/** `declare global { … }` → its contents: the library's namespace belongs to its module, not to the guest's globals. */
function unwrapGlobal(body, file) {
  const open = /^declare global \{\n/m.exec(body);
  if (!open) return body;
  const close = /^\}\n?/m.exec(body.slice(open.index + open[0].length));
  if (!close) throw new Error(`build-libraries: unbalanced declare global in ${file}`);
  const end = open.index + open[0].length + close.index;
  return body.slice(0, open.index) + body.slice(open.index + open[0].length, end) + body.slice(end + close[0].length);
}

/** `export = X;` → `export default X;` and `export import k = X.k;` for each named export of the bundle. */
function exportEquals(body, named, file) {
  const m = /^export = ([A-Za-z_$][\w$]*);$/m.exec(body);
  if (!m) throw new Error(`build-libraries: ${file} has no \`export =\` for the default export`);
  const ns = m[1];
  const lines = [`export default ${ns};`, ...named.map((k) => `export import ${k} = ${ns}.${k};`)];
  return body.slice(0, m.index) + lines.join('\n') + body.slice(m.index + m[0].length);
}

const indent = (text) =>
  text
    .split('\n')
    .map((line) => (line ? `    ${line}` : line))
    .join('\n');

// ---- main

rmSync(OUT_DIR, { recursive: true, force: true });
mkdirSync(OUT_DIR, { recursive: true });
const manifest = [];
for (const spec of LIBRARIES) {
  const dir = packageDir(spec.package ?? spec.name);
  const pkg = readJson(join(dir, 'package.json'));
  const lib = { package: spec.name, ...spec, version: pkg.version, license: spec.license ?? pkg.license ?? 'see the package' };
  const file = fileName(lib.name);
  let module;
  let named = [];
  if (lib.bytes) {
    // Served as they are (engine.ts hands them to QuickJS as an ArrayBuffer), with the licence that goes with them.
    module = `${file}${extname(lib.bytes.file)}`;
    copyFileSync(join(dir, lib.bytes.file), join(OUT_DIR, module));
    if (lib.bytes.licenseFile) copyFileSync(join(dir, lib.bytes.licenseFile), join(OUT_DIR, `${file}.LICENSE.txt`));
  } else {
    const bundled = await bundle(lib);
    named = bundled.named;
    module = `${file}.js`;
    writeFileSync(join(OUT_DIR, module), bundled.code);
  }
  writeFileSync(join(OUT_DIR, `${file}.d.ts`), declarations(lib, named));
  manifest.push({
    name: lib.name,
    aliases: [`${ORIGIN_SCOPE}${lib.name}`],
    package: lib.package,
    version: lib.version,
    description: lib.description,
    license: lib.license,
    format: lib.bytes ? 'bytes' : 'module',
    module,
    types: `${file}.d.ts`,
  });
}
writeFileSync(join(OUT_DIR, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
