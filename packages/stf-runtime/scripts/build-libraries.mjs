#!/usr/bin/env node
/**
 * Builds the libraries STF code may import by package name in the `javascript` runtime (DECISIONS §6):
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
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_DIR = join(PACKAGE_DIR, 'dist', 'libraries');
const require = createRequire(join(PACKAGE_DIR, 'package.json'));

/**
 * The bundled libraries. `entry` is what the bundle re-exports (ES module source, resolved from this package);
 * `types` is the declaration entry: `package` (whose .d.ts files are used) and `file` inside it. A library whose
 * package is CommonJS (`cjs: true`) is exported as `default` plus one named export per own key of its exports
 * object, and an `export =` in its declarations becomes the same default and named exports.
 */
const LIBRARIES = [
  {
    name: 'pdf-lib',
    description: 'Create and modify PDF documents (PDFDocument, StandardFonts, rgb, …)',
    entry: "export * from 'pdf-lib';",
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
];

/**
 * Globals the bundles may use that QuickJS does not have, defined in each bundle's own module scope (the guest's
 * globals stay untouched). pdf-lib's save() yields to the event loop with setTimeout(…, 0) every 50 objects.
 */
const BANNER = [
  'var setTimeout = typeof globalThis.setTimeout === "function" ? globalThis.setTimeout : function (fn) {',
  '  var args = Array.prototype.slice.call(arguments, 2);',
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
    const exported = require(lib.name);
    named = Object.keys(exported).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== 'default' && k !== '$$cjs');
    entry = `import $$cjs from ${JSON.stringify(lib.name)};\nexport default $$cjs;\nexport const { ${named.join(', ')} } = $$cjs;\n`;
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
    banner: { js: `/* ${lib.name} ${lib.version} (${lib.license}), bundled for STF code */\n${BANNER}` },
    logLevel: 'silent',
  });
  for (const w of result.warnings) console.warn(`build-libraries: ${lib.name}: ${w.text}`);
  return { code: result.outputFiles[0].text, named };
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
  const typesDir = packageDir(lib.types.package);
  const entryFile = join(typesDir, lib.types.file);
  const names = new Map([[entryFile, lib.name]]);
  const moduleName = (file) => {
    let name = names.get(file);
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
    for (const seg of segments(readFileSync(file, 'utf8'))) {
      if (seg.type === 'string' && SPECIFIER_BEFORE.test(body.slice(-200))) {
        const target = resolveDeclaration(seg.text.slice(1, -1), file);
        if (!seen.has(target)) {
          seen.add(target);
          queue.push(target);
        }
        body += JSON.stringify(moduleName(target));
      } else if (seg.type === 'comment' && /^\/\/(?:\/\s*<reference\b|# sourceMappingURL=)/.test(seg.text)) {
        // triple-slash references and source maps have no meaning inside the bundle
      } else if (seg.type === 'code') {
        if (/^declare\s+module\b/m.test(seg.text)) throw new Error(`build-libraries: ${file} augments a module`);
        body += seg.text.replace(/^(export\s+)?(default\s+)?declare\s+(?!global\b)/gm, '$1$2');
      } else {
        body += seg.text;
      }
    }
    if (lib.types.unwrapGlobal) body = unwrapGlobal(body, file);
    if (file === entryFile && named.length) body = exportEquals(body, named, file);
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
  const pkg = readJson(join(packageDir(spec.name), 'package.json'));
  const lib = { ...spec, version: pkg.version, license: pkg.license ?? 'see the package' };
  const { code, named } = await bundle(lib);
  const file = fileName(lib.name);
  writeFileSync(join(OUT_DIR, `${file}.js`), code);
  writeFileSync(join(OUT_DIR, `${file}.d.ts`), declarations(lib, named));
  manifest.push({
    name: lib.name,
    version: lib.version,
    description: lib.description,
    license: lib.license,
    module: `${file}.js`,
    types: `${file}.d.ts`,
  });
}
writeFileSync(join(OUT_DIR, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
