import { parseDockerConfig } from './docker-config.js';
import { DEFAULT_LIMITS, StfError, type StfLimits } from './types.js';
import { validateWasmModule } from './wasm/validate.js';

export type RuntimeName = 'javascript' | 'docker' | 'wasm';

/**
 * Checks an STF version's code when it is saved, so a broken version is refused with a clear message instead of
 * failing at run time. (The JavaScript syntax check is still to come: a syntax error shows at the first run.)
 */
export function validateStfCode(runtime: RuntimeName, code: Uint8Array, limits: StfLimits = DEFAULT_LIMITS): void {
  switch (runtime) {
    case 'docker':
      parseDockerConfig(code);
      return;
    case 'wasm':
      validateWasmModule(code, limits);
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
