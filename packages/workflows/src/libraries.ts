/**
 * `Library` input sources: the bundled STF libraries of the javascript runtime (@wds/stf-runtime), as the origin
 * platform's workflows read them — `{ code, types, version }` — by either name form (`pdf-lib`, `@d6e-ai/pdf-lib`).
 */
import { bundledLibrary, listBundledLibraries, resolveLibraryName } from '@wds/stf-runtime';

/** What a `Library` source resolves to (the origin platform's shape). */
export interface LibraryDocument {
  /** The library's source (ES module text; for a font, its bytes as base64). */
  code: string;
  /** Its TypeScript declarations (`declare module "<name asked for>"`). */
  types: string;
  version: string;
}

/** The bundled library `name` as a `Library` source's value, or undefined when it names none. */
export function libraryDocument(name: string): LibraryDocument | undefined {
  const lib = bundledLibrary(name);
  return lib ? { code: lib.code, types: lib.types, version: lib.version } : undefined;
}

/** Whether `name` names a bundled library (either name form). */
export const isBundledLibrary = (name: string): boolean => resolveLibraryName(name) !== undefined;

/** The bare names of the bundled libraries, for messages. */
export const bundledLibraryNames = (): string[] => listBundledLibraries().map((l) => l.name);
