/**
 * Bundled libraries that STF code may import by package name (DECISIONS §6: what `GET /stf-libraries` lists and
 * `/stf-libraries/{name}/types` describes). scripts/build-libraries.mjs builds them into dist/libraries/: one ES
 * module and one .d.ts text per library, and manifest.json. They are read from there on first use, once.
 *
 * The pool hands the name → source map to each worker when it starts it (not with each run); the worker's module
 * loader serves it. Any other import is refused with "module not allowed: <name>".
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What the service lists about a bundled library. */
export interface BundledLibrary {
  name: string;
  version: string;
  description: string;
}

interface ManifestEntry extends BundledLibrary {
  license: string;
  /** File names in dist/libraries/. */
  module: string;
  types: string;
}

interface Loaded {
  dir: string;
  entries: ManifestEntry[];
}

let loaded: Loaded | undefined;
let sources: Readonly<Record<string, string>> | undefined;
const types = new Map<string, string>();

/**
 * dist/libraries/: next to this file's directory in dist/, or — when this file runs from the TypeScript sources
 * (vitest) — the package's dist/, which `pnpm build` fills.
 */
function load(): Loaded {
  if (loaded) return loaded;
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, '..', 'libraries'), join(here, '..', '..', 'dist', 'libraries')];
  const dir = candidates.find((d) => existsSync(join(d, 'manifest.json')));
  if (!dir) {
    throw new Error(
      `the bundled STF libraries are not built (${candidates[candidates.length - 1]}): run \`pnpm build\` in packages/stf-runtime`,
    );
  }
  const entries = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as ManifestEntry[];
  loaded = { dir, entries };
  return loaded;
}

function entry(name: string): ManifestEntry | undefined {
  return load().entries.find((e) => e.name === name);
}

/** The bundled libraries, in the order of scripts/build-libraries.mjs. */
export function listBundledLibraries(): BundledLibrary[] {
  return load().entries.map(({ name, version, description }) => ({ name, version, description }));
}

/** The .d.ts text of a bundled library (ambient `declare module "<name>"` blocks), or undefined for another name. */
export function bundledLibraryTypes(name: string): string | undefined {
  const e = entry(name);
  if (!e) return undefined;
  let text = types.get(name);
  if (text === undefined) {
    text = readFileSync(join(load().dir, e.types), 'utf8');
    types.set(name, text);
  }
  return text;
}

/** name → ES module source of every bundled library (read once). */
export function bundledLibrarySources(): Readonly<Record<string, string>> {
  if (!sources) {
    const { dir, entries } = load();
    sources = Object.freeze(Object.fromEntries(entries.map((e) => [e.name, readFileSync(join(dir, e.module), 'utf8')])));
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
