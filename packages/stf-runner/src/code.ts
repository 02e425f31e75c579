import { validationError } from '@wds/errors';
import { DEFAULT_LIMITS, type RuntimeName, StfError, validateStfCode } from '@wds/stf-runtime';
import type { StfRunnerConfig } from './deps.js';

/**
 * Decodes and checks the code of a version before it is saved: base64, size (STF_MAX_CODE_BYTES), and what its
 * runtime can check without running it — for `javascript`, that it compiles (a syntax error is refused with its
 * line and column, under the run's time limit). Every refusal is a VALIDATION_ERROR about `code`.
 */
export async function decodeStfCode(
  config: Pick<StfRunnerConfig, 'STF_MAX_CODE_BYTES' | 'STF_TIMEOUT_MS'>,
  runtime: RuntimeName,
  base64: string,
): Promise<Buffer> {
  const code = Buffer.from(base64.replace(/\s+/g, ''), 'base64');
  if (code.length === 0) throw validationError('code: must not be empty');
  const max = config.STF_MAX_CODE_BYTES;
  if (code.length > max) throw validationError(`code: at most ${max} bytes after base64 decoding (got ${code.length})`);
  try {
    await validateStfCode(runtime, code, { ...DEFAULT_LIMITS, timeoutMs: config.STF_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof StfError) {
      // Details may go on with lines of their own (a syntax error's source line and caret): keep those below.
      const [first, ...rest] = (err.details ?? '').split('\n');
      throw validationError(`code: ${err.message}${first ? ` (${first})` : ''}${rest.length ? `\n${rest.join('\n')}` : ''}`);
    }
    throw err;
  }
  return code;
}
