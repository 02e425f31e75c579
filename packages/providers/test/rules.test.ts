import { ServiceError } from '@wds/errors';
import { describe, expect, it } from 'vitest';
import {
  buildProviderUrl,
  checkProviderPath,
  checkRequestHeaders,
  DRIVE_PROVIDER,
  parseCredential,
  parseProviders,
  redact,
  responseHeaders,
  serializeCredential,
} from '../src/index.js';

const prefixes = ['/drive/v3/', '/upload/drive/v3/'];

function pathError(path: unknown): string {
  try {
    checkProviderPath(path, prefixes);
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('VALIDATION_ERROR');
    return (err as ServiceError).details ?? '';
  }
  throw new Error(`accepted ${String(path)}`);
}

describe('parseProviders', () => {
  it('defaults to drive_workspace on Google without a client', () => {
    for (const text of [undefined, '', '  ']) {
      const registry = parseProviders(text);
      expect([...registry.keys()]).toEqual([DRIVE_PROVIDER]);
      expect(registry.get(DRIVE_PROVIDER)).toEqual({
        name: DRIVE_PROVIDER,
        baseUrl: 'https://www.googleapis.com',
        tokenUrl: 'https://oauth2.googleapis.com/token',
        allowedPathPrefixes: ['/drive/v3/', '/upload/drive/v3/'],
      });
    }
  });

  it('reads the documented JSON form, filling drive_workspace defaults and keeping other providers', () => {
    const registry = parseProviders(
      JSON.stringify({
        drive_workspace: { client_id: 'cid', client_secret: 'cs' },
        crm: { base_url: 'https://api.crm.example/', token_url: 'https://auth.crm.example/oauth/token', allowed_paths: ['/v2/'] },
      }),
    );
    expect(registry.get(DRIVE_PROVIDER)).toMatchObject({ baseUrl: 'https://www.googleapis.com', clientId: 'cid', clientSecret: 'cs' });
    expect(registry.get('crm')).toEqual({
      name: 'crm',
      baseUrl: 'https://api.crm.example',
      tokenUrl: 'https://auth.crm.example/oauth/token',
      allowedPathPrefixes: ['/v2/'],
    });
  });

  it('accepts http only for loopback IP literals, and only when explicitly allowed', () => {
    const local = JSON.stringify({ drive_workspace: { base_url: 'http://127.0.0.1:9999', token_url: 'http://127.0.0.1:9999/token' } });
    expect(() => parseProviders(local)).toThrow(/base_url: http is accepted only for loopback test servers/);
    expect(parseProviders(local, { allowHttpLoopback: true }).get(DRIVE_PROVIDER)?.baseUrl).toBe('http://127.0.0.1:9999');
    for (const url of ['http://localhost:9999', 'http://10.0.0.1', 'http://example.com', 'ftp://127.0.0.1']) {
      expect(() => parseProviders(JSON.stringify({ x: { base_url: url, allowed_paths: ['/a/'] } }), { allowHttpLoopback: true })).toThrow(
        /PROVIDERS\.x\.base_url: must be an https URL/,
      );
    }
  });

  it('refuses bad configuration with the field named', () => {
    const bad: Array<[string, RegExp]> = [
      ['not json', /not valid JSON/],
      ['[]', /must be a JSON object/],
      ['{"Bad-Name":{}}', /PROVIDERS\.Bad-Name: provider names/],
      ['{"x":{"allowed_paths":["/a/"]}}', /PROVIDERS\.x\.base_url: required/],
      ['{"x":{"base_url":"https://a.example"}}', /PROVIDERS\.x\.allowed_paths: required/],
      ['{"x":{"base_url":"https://a.example/api","allowed_paths":["/a/"]}}', /must be an origin without a path/],
      ['{"x":{"base_url":"https://u:p@a.example","allowed_paths":["/a/"]}}', /must not contain credentials/],
      ['{"x":{"base_url":"https://a.example","allowed_paths":["a/"]}}', /allowed_paths\[0\]: must start and end with \//],
      ['{"x":{"base_url":"https://a.example","allowed_paths":["/a/../"]}}', /allowed_paths\[0\]: .*\.\. segments/],
      ['{"x":{"base_url":"https://a.example","allowed_paths":[]}}', /non-empty array/],
      ['{"x":{"base_url":"https://a.example","allowed_paths":["/a/"],"clientid":"c"}}', /unknown field clientid/],
      ['{"drive_workspace":{"client_secret":"s"}}', /client_secret is given without client_id/],
      ['{"drive_workspace":{"token_url":"http://oauth2.googleapis.com/token"}}', /token_url: must be an https URL/],
    ];
    for (const [text, message] of bad) expect(() => parseProviders(text), text).toThrow(message);
  });
});

describe('checkProviderPath', () => {
  it('accepts plain paths under an allowed prefix', () => {
    for (const p of ['/drive/v3/files', '/drive/v3/files/abc_-123', '/drive/v3/files/a%20b', '/upload/drive/v3/files', '/drive/v3/files/x:copy', '/drive/v3/a.b/c..d']) {
      expect(checkProviderPath(p, prefixes)).toBe(p);
    }
  });

  it('refuses escapes, naming the rule', () => {
    expect(pathError('https://evil.example/drive/v3/files')).toMatch(/must start with \//);
    expect(pathError('drive/v3/files')).toMatch(/must start with \//);
    expect(pathError('//evil.example/drive/v3/files')).toMatch(/must not start with \/\//);
    expect(pathError('/\\evil.example/drive/v3/')).toMatch(/backslash/);
    expect(pathError('/drive/v3/%5c..%5cx')).toMatch(/backslash \(also percent-encoded\)/);
    expect(pathError('/drive/v3/../../admin')).toMatch(/\. or \.\. segments/);
    expect(pathError('/drive/v3/./files')).toMatch(/\. or \.\. segments/);
    expect(pathError('/drive/v3/%2e%2e/admin')).toMatch(/\. or \.\. segments/);
    expect(pathError('/drive/v3/%2E%2e')).toMatch(/\. or \.\. segments/);
    expect(pathError('/drive/v3/files%2F..%2F..%2Fadmin')).toMatch(/\. or \.\. segments/);
    expect(pathError('/drive/v3/%252e%252e/admin')).toMatch(/\. or \.\. segments/);
    expect(pathError('/drive/v3/files?alt=media')).toMatch(/only URL path characters/);
    expect(pathError('/drive/v3/files#x')).toMatch(/only URL path characters/);
    expect(pathError('/drive/v3/fi les')).toMatch(/only URL path characters/);
    expect(pathError('/drive/v3/f%zz')).toMatch(/malformed percent-encoding/);
    expect(pathError('/drive/v3/f%00')).toMatch(/control characters/);
    expect(pathError('/drive/v3/f%0d%0aX-Injected:%201')).toMatch(/control characters/);
    expect(pathError('/admin/v1/users')).toMatch(/must start with one of \/drive\/v3\/, \/upload\/drive\/v3\//);
    expect(pathError('/drive/v30/files')).toMatch(/must start with one of/);
    expect(pathError('')).toMatch(/required/);
    expect(pathError(42)).toMatch(/required/);
  });

  it('builds the URL from the base origin, the path as given and an encoded query', () => {
    const url = buildProviderUrl('https://www.googleapis.com', '/drive/v3/files', { q: "'root' in parents and trashed = false", pageSize: 10, x: undefined, f: ['a', 'b'] });
    expect(url.origin).toBe('https://www.googleapis.com');
    expect(url.pathname).toBe('/drive/v3/files');
    expect([...url.searchParams]).toEqual([
      ['q', "'root' in parents and trashed = false"],
      ['pageSize', '10'],
      ['f', 'a'],
      ['f', 'b'],
    ]);
    // a raw query string cannot change the path or the host
    const raw = buildProviderUrl('https://www.googleapis.com', '/drive/v3/files', 'a=1&b=/../x#frag');
    expect(raw.pathname).toBe('/drive/v3/files');
    expect(raw.hash).toBe('');
    expect(raw.searchParams.get('b')).toBe('/../x#frag');
  });
});

describe('headers', () => {
  it('refuses the headers the service owns, listing them, whatever their case', () => {
    const refused = [
      'Authorization',
      'proxy-authorization',
      'Cookie',
      'HOST',
      'Proxy-Foo',
      'Connection',
      'Keep-Alive',
      'Transfer-Encoding',
      'TE',
      'Upgrade',
      'Content-Length',
      'X-Forwarded-For',
      'x-forwarded-host',
      'Forwarded',
      'Accept-Encoding',
    ];
    for (const name of refused) {
      expect(() => checkRequestHeaders({ [name]: 'x' }), name).toThrow(ServiceError);
      try {
        checkRequestHeaders({ Accept: 'application/json', [name]: 'x' });
      } catch (err) {
        expect((err as ServiceError).code).toBe('VALIDATION_ERROR');
        expect((err as ServiceError).details).toBe(`headers: ${name} may not be sent; the service sets these itself`);
      }
    }
    expect(() => checkRequestHeaders({ Authorization: 'a', Cookie: 'b' })).toThrow(
      expect.objectContaining({ details: 'headers: Authorization, Cookie may not be sent; the service sets these itself' }),
    );
  });

  it('refuses malformed names and values (no header injection)', () => {
    expect(() => checkRequestHeaders({ 'X-A': 'ok\r\nAuthorization: Bearer x' })).toThrow(/Invalid provider headers/);
    expect(() => checkRequestHeaders({ 'X A': 'ok' })).toThrow(/Invalid provider headers/);
    expect(checkRequestHeaders({ Accept: 'application/json', Range: 'bytes=0-9' })).toEqual({ accept: 'application/json', range: 'bytes=0-9' });
  });

  it('drops Set-Cookie and hop-by-hop headers from responses', () => {
    expect(responseHeaders({ 'set-cookie': ['a=1', 'b=2'], connection: 'close', 'content-type': 'text/plain', 'x-multi': ['1', '2'] } as never)).toEqual({
      'content-type': 'text/plain',
      'x-multi': '1, 2',
    });
  });
});

describe('stored credentials', () => {
  const ws = '00000000-0000-0000-0000-000000000001';

  it('reads a bare token and the JSON form (ISO and epoch-second expiry)', () => {
    expect(parseCredential('  ya29.abc  ', ws, 'p')).toEqual({ accessToken: 'ya29.abc', extra: {} });
    expect(parseCredential('{"access_token":"t","refresh_token":"r","expires_at":1700000000,"client_id":"c","scope":"s"}', ws, 'p')).toEqual({
      accessToken: 't',
      refreshToken: 'r',
      expiresAt: 1_700_000_000_000,
      clientId: 'c',
      extra: { scope: 's' },
    });
    expect(parseCredential('{"access_token":"t","expires_at":"2024-01-01T00:00:00Z"}', ws, 'p').expiresAt).toBe(Date.parse('2024-01-01T00:00:00Z'));
    const round = parseCredential(serializeCredential(parseCredential('{"access_token":"t","refresh_token":"r","expires_at":1700000000,"x":1}', ws, 'p')), ws, 'p');
    expect(round).toEqual({ accessToken: 't', refreshToken: 'r', expiresAt: 1_700_000_000_000, extra: { x: 1 } });
  });

  it('refuses unusable values without repeating them', () => {
    const secret = 'sekrit-value-123';
    for (const value of [`{"access_token":"${secret}`, `{"access_token":"${secret}","expires_at":"soon"}`, `${secret} with spaces`, '{"scope":"x"}']) {
      try {
        parseCredential(value, ws, 'drive_workspace');
        throw new Error('accepted');
      } catch (err) {
        expect((err as ServiceError).code).toBe('CONFLICT');
        expect((err as ServiceError).message).toMatch(/^The stored credential for provider drive_workspace is not usable/);
        expect(JSON.stringify((err as ServiceError).toBody())).not.toContain(secret);
      }
    }
  });

  it('redacts secrets from text', () => {
    expect(redact('token abcd1234 and abcd1234', ['abcd1234', undefined])).toBe('token [redacted] and [redacted]');
  });
});
