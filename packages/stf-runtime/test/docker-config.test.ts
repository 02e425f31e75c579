import { describe, expect, it } from 'vitest';
import { parseDockerConfig } from '../src/docker-config.js';

const enc = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

describe('parseDockerConfig', () => {
  it('accepts the documented shape', () => {
    expect(parseDockerConfig(enc({ image: 'localhost/py:3.11', command: ['python3', '/app/main.py'], env: { MODE: 'x' }, secret_keys: ['API_TOKEN'] }))).toEqual({
      image: 'localhost/py:3.11',
      command: ['python3', '/app/main.py'],
      env: { MODE: 'x' },
      secret_keys: ['API_TOKEN'],
    });
  });

  it('accepts an image alone (the origin platform form): the image runs its own ENTRYPOINT and CMD', () => {
    expect(parseDockerConfig(enc({ image: 'ghcr.io/acme/stf-invoices:1.2.0' }))).toEqual({ image: 'ghcr.io/acme/stf-invoices:1.2.0' });
    expect(parseDockerConfig(enc({ image: 'echo-stf:latest', secret_keys: ['API_KEY'] }))).toEqual({ image: 'echo-stf:latest', secret_keys: ['API_KEY'] });
  });

  it.each([
    ['not json', 'JSON object'],
    [[], 'JSON object'],
    [{ image: 'x', command: 'python3 main.py' }, 'command must be'],
    [{ image: 'x', command: [] }, 'command must be'],
    [{ image: 'x', command: [1] }, 'command must be'],
    [{ image: 'x', command: null }, 'command must be'],
    [{ command: ['a'] }, 'image must be'],
    [{ image: 'Bad Image!', command: ['a'] }, 'image'],
    [{ image: 'x', command: ['a'], env: { '1BAD': 'x' } }, 'env name'],
    [{ image: 'x', command: ['a'], env: { OK: 1 } }, 'env OK'],
    [{ image: 'x', command: ['a'], secret_keys: ['no-dash'] }, 'secret_keys'],
    [{ image: 'x', command: ['a'], network: 'host' }, 'unknown field network'],
  ])('refuses %j', (input, why) => {
    expect(() => parseDockerConfig(enc(input))).toThrow(expect.objectContaining({ kind: 'invalid_module', message: expect.stringContaining(why) }));
  });
});
