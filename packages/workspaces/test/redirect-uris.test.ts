import { describe, expect, it } from 'vitest';
import { checkRedirectUri } from '../src/index.js';

describe('checkRedirectUri', () => {
  it('accepts HTTPS URLs up to 2000 characters', () => {
    expect(() => checkRedirectUri('https://app.example.com/cb?x=1')).not.toThrow();
    const long = `https://e.com/${'a'.repeat(2000 - 14)}`;
    expect(long).toHaveLength(2000);
    expect(() => checkRedirectUri(long)).not.toThrow();
  });

  it.each([
    ['http://app.example.com/cb', 'https'],
    ['https://app.example.com/cb#frag', 'fragment'],
    ['https://app.example.com/cb#', 'fragment'],
    ['/relative/cb', 'absolute'],
    ['javascript:alert(1)', 'https'],
    [`https://e.com/${'a'.repeat(1987)}`, '2000'],
  ])('refuses %s', (uri, why) => {
    expect(() => checkRedirectUri(uri)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR', details: expect.stringContaining(why) }));
  });
});
