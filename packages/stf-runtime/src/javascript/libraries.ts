/**
 * Bundled libraries that STF code may import by package name (docs/stfs.md#bundled-libraries: what `GET /stf-libraries`
 * lists and `/stf-libraries/{name}/types` describes). scripts/build-libraries.mjs builds them into dist/libraries/: one
 * ES module (or, for a font, the file itself) and one .d.ts text per library, and manifest.json.
 *
 * Every library has two names: its bare name (`pdf-lib`) and the origin platform's (`@d6e-ai/pdf-lib`);
 * `resolveLibraryName` is the one place that maps an import specifier to a library. Any other import is refused
 * with "module not allowed: <name>".
 *
 * Nothing is read before it is needed: the pool hands each worker the directory and the manifest (a few hundred
 * bytes), and a worker reads a bundle (`LibraryStore`) when a run first imports it, then keeps it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The origin platform's scope: `@d6e-ai/<name>` names the same library as `<name>`. */
export const ORIGIN_SCOPE = '@d6e-ai/';

/** What the service lists about a bundled library. */
export interface BundledLibrary {
  /** The bare package name (`pdf-lib`); import it by this name or by an alias. */
  name: string;
  /** The other names it can be imported by: `@d6e-ai/<name>`, as on the origin platform. */
  aliases: string[];
  version: string;
  description: string;
  /** SPDX licence of what is bundled. */
  license: string;
}

/** One entry of dist/libraries/manifest.json. */
export interface LibraryManifestEntry extends BundledLibrary {
  /** The npm package bundled (`@pdf-lib/fontkit` for `fontkit`). */
  package: string;
  /** `module`: an ES module source; `bytes`: a file whose bytes are the module's default export (a Uint8Array). */
  format: 'module' | 'bytes';
  /** File names in dist/libraries/. */
  module: string;
  types: string;
}

/** Where the bundles are and what they are: all a worker needs to load them on first use. */
export interface LibraryCatalog {
  dir: string;
  entries: LibraryManifestEntry[];
}

/** A library as the module loader serves it: ES module source, or bytes (engine.ts makes their module). */
export type LibraryModule = string | { bytes: ArrayBuffer };

let catalog: LibraryCatalog | undefined;
const types = new Map<string, string>();

/**
 * dist/libraries/: next to this file's directory in dist/, or — when this file runs from the TypeScript sources
 * (vitest) — the package's dist/, which `pnpm build` fills.
 */
export function libraryCatalog(): LibraryCatalog {
  if (catalog) return catalog;
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, '..', 'libraries'), join(here, '..', '..', 'dist', 'libraries')];
  const dir = candidates.find((d) => existsSync(join(d, 'manifest.json')));
  if (!dir) {
    throw new Error(
      `the bundled STF libraries are not built (${candidates[candidates.length - 1]}): run \`pnpm build\` in packages/stf-runtime`,
    );
  }
  const entries = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as LibraryManifestEntry[];
  catalog = { dir, entries };
  return catalog;
}

/**
 * The library an import specifier names — `pdf-lib` and `@d6e-ai/pdf-lib` both give `pdf-lib` — or undefined when
 * it names none (subpaths such as `date-fns/format` included). `known` says which bare names exist (default: the
 * bundled libraries).
 */
export function resolveLibraryName(spec: string, known: (name: string) => boolean = isBundled): string | undefined {
  const name = spec.startsWith(ORIGIN_SCOPE) ? spec.slice(ORIGIN_SCOPE.length) : spec;
  return name !== '' && known(name) ? name : undefined;
}

const isBundled = (name: string): boolean => entryOf(name) !== undefined;

function entryOf(name: string): LibraryManifestEntry | undefined {
  return libraryCatalog().entries.find((e) => e.name === name);
}

/**
 * The libraries one worker serves, read from disk when a run first imports them and kept (per worker thread).
 * Made from the catalog, or from inline sources (JavascriptRuntimeOptions.libraries: name → ES module source).
 */
export class LibraryStore {
  private readonly loaded = new Map<string, LibraryModule>();
  private readonly entries: Map<string, LibraryManifestEntry>;

  constructor(
    private readonly from: { catalog: LibraryCatalog } | { sources: Record<string, string> },
  ) {
    this.entries = new Map('catalog' in from ? from.catalog.entries.map((e) => [e.name, e]) : []);
    if ('sources' in from) for (const [name, code] of Object.entries(from.sources)) this.loaded.set(name, code);
  }

  /** The library's bare name, for either name form; undefined when the specifier names none. */
  resolve(spec: string): string | undefined {
    return resolveLibraryName(spec, (name) => this.entries.has(name) || this.loaded.has(name));
  }

  /** The library an import specifier names, read on first use; undefined when it names none. */
  load(spec: string): LibraryModule | undefined {
    const name = this.resolve(spec);
    if (name === undefined) return undefined;
    let module = this.loaded.get(name);
    if (module === undefined) {
      const e = this.entries.get(name)!;
      const file = join((this.from as { catalog: LibraryCatalog }).catalog.dir, e.module);
      if (e.format === 'bytes') {
        const data = readFileSync(file);
        module = { bytes: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer };
      } else {
        module = readFileSync(file, 'utf8');
      }
      this.loaded.set(name, module);
    }
    return module;
  }
}

/** The bundled libraries, in the order of scripts/build-libraries.mjs. */
export function listBundledLibraries(): BundledLibrary[] {
  return libraryCatalog().entries.map(({ name, aliases, version, description, license }) => ({
    name,
    aliases: [...aliases],
    version,
    description,
    license,
  }));
}

/**
 * The .d.ts text of a bundled library, for either name form: ambient `declare module "<name>"` blocks, where
 * `<name>` is the name asked for (`@d6e-ai/pdf-lib` gives `declare module "@d6e-ai/pdf-lib"`, so the text types the
 * imports written that way); undefined for another name.
 */
export function bundledLibraryTypes(spec: string): string | undefined {
  const name = resolveLibraryName(spec);
  if (name === undefined) return undefined;
  let text = types.get(spec);
  if (text === undefined) {
    const base = readFileSync(join(libraryCatalog().dir, entryOf(name)!.types), 'utf8');
    text = spec === name ? base : renameModules(base, name, spec);
    types.set(spec, text);
  }
  return text;
}

/** `"<from>"` and `"<from>/__types/…"` module names (and the header's mentions) → the same under `<to>`. */
function renameModules(text: string, from: string, to: string): string {
  const quoted = new RegExp(`"${from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=["/])`, 'g');
  return text.replace(quoted, `"${to}`);
}

/** A bundled library with its code and types (bundledLibrary). */
export interface BundledLibraryCode {
  /** The bare name, whichever form was asked for. */
  name: string;
  version: string;
  /** `module`: `code` is ES module source; `bytes` (the font): `code` is the file's bytes as base64. */
  format: 'module' | 'bytes';
  code: string;
  /** The .d.ts text, declaring the name form asked for (bundledLibraryTypes). */
  types: string;
}

/** Each library's code as bundledLibrary answers it, read once (the files do not change while the process runs). */
const codes = new Map<string, string>();

/** A bundled library with its code and types, for either name form; undefined for another name. */
export function bundledLibrary(spec: string): BundledLibraryCode | undefined {
  const name = resolveLibraryName(spec);
  if (name === undefined) return undefined;
  const e = entryOf(name)!;
  let code = codes.get(name);
  if (code === undefined) {
    const file = join(libraryCatalog().dir, e.module);
    code = e.format === 'bytes' ? readFileSync(file).toString('base64') : readFileSync(file, 'utf8');
    codes.set(name, code);
  }
  return { name, version: e.version, format: e.format, code, types: bundledLibraryTypes(spec)! };
}

let sources: Readonly<Record<string, string>> | undefined;

/**
 * name → ES module source of every bundled ES module library (read once; not the font, which is bytes). The
 * runtime itself does not use it (workers read what they import); kept for callers that want the sources.
 */
export function bundledLibrarySources(): Readonly<Record<string, string>> {
  if (!sources) {
    const { dir, entries } = libraryCatalog();
    sources = Object.freeze(
      Object.fromEntries(entries.filter((e) => e.format === 'module').map((e) => [e.name, readFileSync(join(dir, e.module), 'utf8')])),
    );
  }
  return sources;
}

/**
 * The same map as bundledLibrarySources(), as a read-only object that reads the bundles on first access (so
 * importing this package reads nothing).
 */
export const BUNDLED_LIBRARIES: Readonly<Record<string, string>> = new Proxy({} as Record<string, string>, {
  get: (_t, key) => (typeof key === 'string' ? bundledLibrarySources()[key] : undefined),
  has: (_t, key) => typeof key === 'string' && Object.hasOwn(bundledLibrarySources(), key),
  ownKeys: () => Object.keys(bundledLibrarySources()),
  getOwnPropertyDescriptor: (_t, key) => {
    const all = bundledLibrarySources();
    if (typeof key !== 'string' || !Object.hasOwn(all, key)) return undefined;
    return { value: all[key], writable: false, enumerable: true, configurable: true };
  },
  set: () => false,
  defineProperty: () => false,
  deleteProperty: () => false,
});

export function moduleNotAllowed(name: string): Error {
  return new Error(`module not allowed: ${name}`);
}
