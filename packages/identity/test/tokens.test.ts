import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { API_KEY_PREFIX, SESSION_PREFIX, bearerToken, createJwtVerifier, generateToken, hashToken } from '../src/index.js';

describe('tokens', () => {
  it('carry their prefix and 256 random bits, and differ every time', () => {
    const a = generateToken(SESSION_PREFIX);
    const b = generateToken(SESSION_PREFIX);
    expect(a).toMatch(/^ses_[A-Za-z0-9_-]{43}$/);
    expect(generateToken(API_KEY_PREFIX)).toMatch(/^svc_/);
    expect(a).not.toBe(b);
  });

  it('are stored as a deterministic hash that does not contain them', () => {
    const t = generateToken(API_KEY_PREFIX);
    expect(hashToken(t)).toBe(hashToken(t));
    expect(hashToken(t)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(t)).not.toContain(t.slice(4, 12));
  });

  it('hash as SHA-256 of the UTF-8 text, hex (what the stored hashes are)', () => {
    for (const t of ['ses_abc', 'svc_\u00e9\u{1F600}', 'eyJ.a.b']) {
      expect(hashToken(t)).toBe(createHash('sha256').update(Buffer.from(t, 'utf8')).digest('hex'));
    }
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('bearerToken', () => {
  it('accepts exactly one Bearer credential', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    for (const bad of [undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearer a b', 'abc']) {
      expect(() => bearerToken(bad)).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
    }
  });
});

describe('createJwtVerifier', () => {
  const secret = 'a-test-secret-that-is-long-enough-000';
  const sign = (claims: Record<string, unknown>, key = secret) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('u1').setExpirationTime('1m').sign(new TextEncoder().encode(key));

  it('is off without configuration', () => {
    expect(createJwtVerifier({})).toBeUndefined();
  });

  it('verifies HS256 and reads sub, email, name and the workspace scope', async () => {
    const verify = createJwtVerifier({ secret })!;
    const claims = await verify(await sign({ email: 'a@b.c', name: 'A', workspace_id: 'w' }));
    expect(claims).toMatchObject({ sub: 'u1', email: 'a@b.c', name: 'A', workspaceId: 'w' });
    expect(claims.expiresAt?.getTime()).toBeGreaterThan(Date.now());
    await expect(verify(await sign({}, 'another-secret-another-secret-00000'))).rejects.toThrow();
  });

  it('checks issuer and audience when configured', async () => {
    const verify = createJwtVerifier({ secret, issuer: 'https://id.example', audience: 'wds' })!;
    await expect(verify(await sign({}))).rejects.toThrow();
    const good = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('u1')
      .setIssuer('https://id.example')
      .setAudience('wds')
      .setExpirationTime('1m')
      .sign(new TextEncoder().encode(secret));
    expect((await verify(good)).sub).toBe('u1');
  });

  it('reads email_verified as true only for true (or "true")', async () => {
    const verify = createJwtVerifier({ secret })!;
    for (const [given, read] of [[true, true], ['true', true], [false, false], ['false', false], [1, false], ['TRUE', false], [undefined, false]] as const) {
      expect((await verify(await sign({ email: 'a@b.c', email_verified: given }))).emailVerified).toBe(read);
    }
  });

  it('refuses a JWKS without an issuer: one key set may sign for many issuers, a subject is unique within one', () => {
    expect(() => createJwtVerifier({ jwksUrl: 'https://id.example/jwks.json' })).toThrow(/AUTH_JWT_ISSUER/);
    expect(createJwtVerifier({ jwksUrl: 'https://id.example/jwks.json', issuer: 'https://id.example' })).toBeTypeOf('function');
  });
});
