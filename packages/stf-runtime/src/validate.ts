import { parseDockerConfig } from './docker-config.js';
import { StfError } from './types.js';

// Node provides WebAssembly; the TypeScript lib here (ES2023, no DOM) does not declare it.
const wasm = (globalThis as unknown as { WebAssembly: { validate(bytes: Uint8Array): boolean } }).WebAssembly;

export type RuntimeName = 'javascript' | 'docker' | 'wasm';

/**
 * Checks an STF version's code when it is saved, so a broken version is refused with a clear message instead of
 * failing at run time. (The JavaScript syntax check and the full wasm module checks come with those runtimes.)
 */
export function validateStfCode(runtime: RuntimeName, code: Uint8Array): void {
  switch (runtime) {
    case 'docker':
      parseDockerConfig(code);
      return;
    case 'wasm':
      if (!wasm.validate(code)) throw new StfError('invalid_module', 'Not a valid WebAssembly module');
      return;
    case 'javascript':
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(code);
      } catch {
        throw new StfError('syntax', 'JavaScript code must be UTF-8 text');
      }
      return;
  }
}
