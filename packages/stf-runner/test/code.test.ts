import { describe, expect, it } from 'vitest';
import { decodeStfCode } from '../src/index.js';
import { config } from './fakes.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('decodeStfCode', () => {
  it('decodes base64 (whitespace ignored) into the bytes that are saved', async () => {
    const code = 'export default (x) => x;';
    const encoded = b64(code).replace(/(.{8})/g, '$1\n');
    expect((await decodeStfCode(config, 'javascript', encoded)).toString('utf8')).toBe(code);
  });

  it('refuses empty and oversized code as validation errors about code', async () => {
    await expect(decodeStfCode(config, 'javascript', '')).rejects.toMatchObject({ code: 'VALIDATION_ERROR', details: 'code: must not be empty' });
    await expect(decodeStfCode(config, 'javascript', b64('x'.repeat(65)))).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      details: 'code: at most 64 bytes after base64 decoding (got 65)',
    });
  });

  it('refuses javascript that does not compile, with where', async () => {
    const err = await decodeStfCode(config, 'javascript', b64('export default (x => ;')).catch((e) => e);
    expect(err).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(err.details).toMatch(/^code: .*\(line 1, column \d+/);
  });
});
