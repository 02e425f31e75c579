import * as crypto from 'node:crypto';

export const SESSION_PREFIX = 'ses_';
export const API_KEY_PREFIX = 'svc_';

/** 256 random bits after the prefix; only the hash is ever stored. */
export const generateToken = (prefix: string): string => prefix + crypto.randomBytes(32).toString('base64url');

/**
 * The tokens are high-entropy, so a fast hash is enough (no salt or slow KDF needed). Every authenticated request
 * hashes its token (the principal cache is keyed by the hash): the one-shot `crypto.hash` (Node ≥ 20.12) costs a
 * third of a `createHash` object; the same SHA-256 of the UTF-8 text either way.
 */
export const hashToken: (token: string) => string =
  typeof crypto.hash === 'function'
    ? (token) => crypto.hash('sha256', token, 'hex')
    : (token) => crypto.createHash('sha256').update(token).digest('hex');

/** What a listing may show of a key: its prefix and first characters, never enough to use it. */
export const displayPrefix = (token: string): string => token.slice(0, 10);
