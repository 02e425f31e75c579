import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../src/index.js';

const box = SecretBox.fromBase64(randomBytes(32).toString('base64'));

describe('SecretBox', () => {
  it('round-trips, with a fresh nonce each time and no plaintext in the sealed bytes', () => {
    const a = box.seal('hunter2-secret', 'stf:1:TOKEN');
    const b = box.seal('hunter2-secret', 'stf:1:TOKEN');
    expect(a.equals(b)).toBe(false);
    expect(a.includes(Buffer.from('hunter2'))).toBe(false);
    expect(box.open(a, 'stf:1:TOKEN')).toBe('hunter2-secret');
  });

  it('refuses another place, another key, and tampering', () => {
    const sealed = box.seal('v', 'stf:1:A');
    expect(() => box.open(sealed, 'stf:2:A')).toThrow();
    expect(() => SecretBox.fromBase64(randomBytes(32).toString('base64')).open(sealed, 'stf:1:A')).toThrow();
    const tampered = Buffer.from(sealed);
    tampered.writeUInt8(tampered.readUInt8(tampered.length - 1) ^ 1, tampered.length - 1);
    expect(() => box.open(tampered, 'stf:1:A')).toThrow();
    expect(() => box.open(Buffer.of(1, 2, 3), 'stf:1:A')).toThrow(/Not a sealed value/);
  });

  it('keys must be 32 bytes; a key file is created once with mode 0600 and reused', async () => {
    expect(() => SecretBox.fromBase64('c2hvcnQ=')).toThrow(/32 bytes/);
    const dir = await mkdtemp(join(tmpdir(), 'wds-key-'));
    try {
      const path = join(dir, 'secrets-key');
      const first = await SecretBox.fromFile(path);
      expect(first.created).toBe(true);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      const second = await SecretBox.fromFile(path);
      expect(second.created).toBe(false);
      expect(second.box.open(first.box.seal('x', 'a'), 'a')).toBe('x');
      expect((await readFile(path, 'utf8')).trim()).toHaveLength(44);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
