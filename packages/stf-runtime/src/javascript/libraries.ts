/**
 * Bundled libraries that STF code may import by package name (DECISIONS §6: what `GET /stf-libraries` lists).
 * The map is name → ES module source text; it is handed to each worker, whose module loader serves it. Any other
 * import is refused with "module not allowed: <name>". The libraries themselves come in a later step.
 */
export const BUNDLED_LIBRARIES: Readonly<Record<string, string>> = Object.freeze({});

export function moduleNotAllowed(name: string): Error {
  return new Error(`module not allowed: ${name}`);
}
