import { describe, expect, it } from 'vitest';
import { checkFilename, contentDisposition } from '../src/index.js';

/** The header's two filenames, decoded. */
function parse(header: string): { fallback: string; utf8: string } {
  const m = /^attachment; filename="([^"\\]*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+\-.^_`|~%]*)$/.exec(header);
  if (!m) throw new Error(`not the expected shape: ${header}`);
  return { fallback: m[1]!, utf8: decodeURIComponent(m[2]!) };
}

describe('contentDisposition', () => {
  it('a plain name', () => {
    expect(contentDisposition('report.pdf')).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
  });

  it('quotes and backslashes are stripped', () => {
    const h = contentDisposition('say "hi"\\there.txt');
    expect(parse(h)).toEqual({ fallback: 'say hithere.txt', utf8: 'say hithere.txt' });
  });

  it('non-ASCII: UTF-8 percent-encoded, an ASCII fallback', () => {
    expect(contentDisposition('café.txt')).toBe(`attachment; filename="cafe.txt"; filename*=UTF-8''caf%C3%A9.txt`);
    expect(parse(contentDisposition('日本.txt'))).toEqual({ fallback: '__.txt', utf8: '日本.txt' });
    expect(parse(contentDisposition('naïve 😀.md'))).toEqual({ fallback: 'naive _.md', utf8: 'naïve 😀.md' });
  });

  it('path separators and ../ are stripped', () => {
    expect(parse(contentDisposition('../../etc/passwd'))).toEqual({ fallback: '....etcpasswd', utf8: '....etcpasswd' });
    expect(parse(contentDisposition('..\\windows\\win.ini')).utf8).toBe('..windowswin.ini');
    expect(parse(contentDisposition('..')).utf8).toBe('download');
  });

  it('CR/LF and other controls cannot split or inject headers', () => {
    const h = contentDisposition('a\r\nSet-Cookie: x=1\u0000\t.txt');
    expect(h).not.toMatch(/[\r\n\0\t]/);
    expect(parse(h)).toEqual({ fallback: 'aSet-Cookie: x=1.txt', utf8: 'aSet-Cookie: x=1.txt' });
  });

  it("characters outside RFC 8187's attr-char are encoded; bidi overrides dropped; empty becomes download", () => {
    const h = contentDisposition("it's (draft)*;%.txt");
    expect(h).toContain(`filename*=UTF-8''it%27s%20%28draft%29%2A%3B%25.txt`);
    expect(parse(h).utf8).toBe("it's (draft)*;%.txt");
    expect(parse(contentDisposition('evil\u202Etxt.exe')).utf8).toBe('eviltxt.exe');
    expect(parse(contentDisposition('"/\\\r\n')).utf8).toBe('download');
    expect(parse(contentDisposition('\uD800x')).utf8).toBe('\uFFFDx');
  });
});

describe('checkFilename', () => {
  it('accepts ordinary names, also non-ASCII and 255 characters', () => {
    for (const ok of ['report.pdf', 'café 日本.txt', '.env', 'a'.repeat(255), '😀'.repeat(255)]) expect(checkFilename(ok)).toBeUndefined();
  });

  it('refuses empty, too long, control characters, path separators, . and ..', () => {
    expect(checkFilename('')).toMatch(/empty/);
    expect(checkFilename('a'.repeat(256))).toMatch(/255/);
    expect(checkFilename('a\nb')).toMatch(/control/);
    expect(checkFilename('a\u0000b')).toMatch(/control/);
    expect(checkFilename('a\u007fb')).toMatch(/control/);
    expect(checkFilename('../x')).toMatch(/separator/);
    expect(checkFilename('a\\b')).toMatch(/separator/);
    expect(checkFilename('..')).toMatch(/\.\./);
  });
});
