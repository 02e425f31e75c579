import { parseDockerConfig } from './docker-config.js';
import { checkJavascriptSyntax } from './javascript/syntax-check.js';
import { DEFAULT_LIMITS, StfError, type StfLimits } from './types.js';
import { validateWasmModule } from './wasm/validate.js';

/** The STF runtimes, in the order the API lists them; a version's `runtime` column holds one of these. */
export const RUNTIME_NAMES = ['javascript', 'docker', 'wasm'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

/**
 * Checks an STF version's code when it is saved, so a broken version is refused with a clear message instead of
 * failing at run time. Rejects with a StfError saying what is wrong (a plain Error means the check itself failed).
 *
 * JavaScript must be UTF-8 and must compile the way a run compiles it (script or module form, same wrapper, same
 * stack and memory limits, `limits.timeoutMs` to do it): a syntax error is a StfError of kind `syntax` whose
 * details start with `line L, column C` in the user's own code — the position a run would report. Imports are only
 * parsed, never resolved.
 */
export async function validateStfCode(runtime: RuntimeName, code: Uint8Array, limits: StfLimits = DEFAULT_LIMITS): Promise<void> {
  switch (runtime) {
    case 'docker':
      parseDockerConfig(code);
      return;
    case 'wasm':
      validateWasmModule(code, limits);
      return;
    case 'javascript': {
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(code);
      } catch {
        throw new StfError('syntax', 'JavaScript code must be UTF-8 text');
      }
      await checkJavascriptSyntax(text, limits);
      return;
    }
  }
}
