import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Secrets at rest (STF secrets, provider credentials): AES-256-GCM with a random 96-bit nonce per value.
 * Sealed form: version byte 1 | nonce (12) | tag (16) | ciphertext. The associated data binds a value to where it
 * belongs (e.g. `stf:<id>:<key>`), so a sealed value copied to another row does not open there.
 */
const VERSION = 1;
const NONCE = 12;
const TAG = 16;

export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** From a base64 key of exactly 32 bytes. */
  static fromBase64(key: string): SecretBox {
    const raw = Buffer.from(key, 'base64');
    if (raw.length !== 32) throw new Error('The secrets key must be 32 bytes, base64-encoded');
    return new SecretBox(raw);
  }

  /** Reads the key from `path`, creating it (mode 0600) on first use. For the embedded default only. */
  static async fromFile(path: string): Promise<{ box: SecretBox; created: boolean }> {
    try {
      return { box: SecretBox.fromBase64((await readFile(path, 'utf8')).trim()), created: false };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    await mkdir(dirname(path), { recursive: true });
    const key = randomBytes(32).toString('base64');
    await writeFile(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
    return { box: SecretBox.fromBase64(key), created: true };
  }

  seal(plaintext: string, associated: string): Buffer {
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(associated, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, cipher.getAuthTag(), body]);
  }

  /** Throws when the value was not sealed with this key for this associated data. */
  open(sealed: Buffer, associated: string): string {
    if (sealed.length < 1 + NONCE + TAG || sealed[0] !== VERSION) throw new Error('Not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(1, 1 + NONCE));
    decipher.setAAD(Buffer.from(associated, 'utf8'));
    decipher.setAuthTag(sealed.subarray(1 + NONCE, 1 + NONCE + TAG));
    return Buffer.concat([decipher.update(sealed.subarray(1 + NONCE + TAG)), decipher.final()]).toString('utf8');
  }
}
