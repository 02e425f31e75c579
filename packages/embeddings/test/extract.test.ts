import { describe, expect, it } from 'vitest';
import { extractText, jsonToText } from '../src/index.js';
import { minimalPdf } from './fixtures.js';

const utf8 = (s: string) => new TextEncoder().encode(s);
const text = async (bytes: Uint8Array, type: string, name?: string) => {
  const result = await extractText(bytes, type, name);
  if (!('text' in result)) throw new Error(`expected text, got skipped: ${result.skipped}`);
  return result.text;
};

describe('extractText: text formats', () => {
  it('plain text: UTF-8 with BOM, CRLF, declared charsets and UTF-16', async () => {
    expect(await text(utf8('\ufeffHello\r\nwörld 😀\r\n'), 'text/plain')).toBe('Hello\nwörld 😀\n');
    expect(await text(new Uint8Array([0x63, 0x61, 0x66, 0xe9]), 'text/plain; charset=ISO-8859-1')).toBe('café');
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Grüße', 'utf16le')]);
    expect(await text(new Uint8Array(utf16), 'text/plain')).toBe('Grüße');
    expect(await text(utf8('unknown charset'), 'text/plain; charset=x-nonsense')).toBe('unknown charset');
  });

  it('Markdown keeps the text and drops link and image targets', async () => {
    const md = '# Title\n\nSee [the docs](https://example.com/a_(b)) and ![a chart](img/c.png "Chart").\n<!-- hidden -->';
    expect(await text(utf8(md), 'text/markdown')).toBe('# Title\n\nSee the docs and a chart.\n');
  });

  it('CSV: one labelled line per record, with quoted delimiters, quotes and line breaks', async () => {
    const csv = 'name,city,note\r\nAda,"London, UK","said ""hi""\nthen left"\nBob,,\n\n';
    expect(await text(utf8(csv), 'text/csv')).toBe('name: Ada; city: London, UK; note: said "hi" then left\nname: Bob');
    // Semicolons are detected; Windows sends CSV as application/vnd.ms-excel.
    expect(await text(utf8('a;b\n1;2'), 'application/vnd.ms-excel', 'export.CSV')).toBe('a: 1; b: 2');
    expect(await text(utf8('a\tb\n1\t2'), 'text/tab-separated-values')).toBe('a: 1; b: 2');
    expect(await text(utf8('only,a,header'), 'text/csv')).toBe('only, a, header');
  });

  it('JSON: readable path: value lines; records separated by blank lines; invalid JSON as text', async () => {
    const json = { title: 'Report', meta: { author: 'Ada', draft: false, empty: '', none: null }, tags: ['x', 'y'], n: 3 };
    expect(await text(utf8(JSON.stringify(json)), 'application/json')).toBe(
      'title: Report\nmeta.author: Ada\nmeta.draft: false\ntags: x, y\nn: 3',
    );
    expect(jsonToText([{ a: 1 }, { a: 2, b: { c: 'd' } }])).toBe('a: 1\n\na: 2\nb.c: d');
    expect(jsonToText({ items: [{ name: 'p' }, { name: 'q' }], list: [1, { k: 'v' }] })).toBe(
      'items.name: p\nitems.name: q\nlist: 1\nlist.k: v',
    );
    expect(jsonToText('just a string')).toBe('just a string');
    expect(await text(utf8('{"broken": '), 'application/json')).toBe('{"broken": ');
    expect(await text(utf8('{"a":"b"}'), 'application/vnd.api+json')).toBe('a: b');
  });

  it('HTML: drops scripts, styles and comments, breaks blocks into lines, decodes entities', async () => {
    const html = `<!doctype html><html><head><title>My &amp; Page</title>
      <style>body { color: red }</style><script>var x = "<p>not text</p>";</script></head>
      <body><h1>Caf&eacute; &#8212; menu</h1><!-- secret comment -->
      <p>Fish&nbsp;&amp;&nbsp;chips &lt;b&gt;cheap&lt;/b&gt; &#x1F600; &bogus; &#0;</p>
      <ul><li>One</li><li>Two</li></ul><p>Bold<b>er</b> text<br>next line</p>
      <noscript>enable js</noscript></body></html>`;
    expect(await text(utf8(html), 'text/html; charset=utf-8')).toBe(
      'My & Page\n\nCafé — menu\n\nFish & chips <b>cheap</b> 😀 &bogus; \ufffd\n\nOne\nTwo\n\nBolder text\nnext line',
    );
  });

  it('XML: every tag separates words', async () => {
    expect(await text(utf8('<?xml version="1.0"?><a><b>one</b><c>two &amp; <![CDATA[three]]></c></a>'), 'application/xml')).toBe(
      'one\ntwo & three',
    );
  });

  it('uses the extension, then the bytes, when the content type is generic', async () => {
    expect(await text(utf8('a,b\n1,2'), 'application/octet-stream', 'data.csv')).toBe('a: 1; b: 2');
    expect(await text(utf8('<p>x &amp; y</p>'), 'application/octet-stream', 'page.HTM')).toBe('x & y');
    expect(await text(utf8('{"k":"v"}'), '', 'x.json')).toBe('k: v');
    expect(await text(utf8('no extension, but text'), 'application/octet-stream', 'README')).toBe('no extension, but text');
  });
});

describe('extractText: PDF', () => {
  it('extracts the text of a hand-built PDF, pages separated by a blank line', async () => {
    const pdf = minimalPdf([['Quarterly report (draft)', 'Revenue grew by 12 percent.'], ['Second page text']]);
    const result = await text(pdf, 'application/pdf', 'report.pdf');
    expect(result).toBe('Quarterly report (draft)\nRevenue grew by 12 percent.\n\nSecond page text');
    // The caller's bytes are left intact (PDF.js detaches the buffer it is given).
    expect(pdf.byteLength).toBeGreaterThan(0);
    expect(await text(pdf, 'application/octet-stream', 'report.pdf')).toBe(result);
    expect(await text(pdf, 'application/octet-stream')).toBe(result); // by its %PDF- magic
  });

  it('skips a PDF that cannot be read, or one without text', async () => {
    const broken = await extractText(utf8('%PDF-1.4\nthis is not really a pdf'), 'application/pdf');
    expect(broken).toEqual({ skipped: expect.stringMatching(/^the PDF could not be read: /) });
    expect(await extractText(minimalPdf([[]]), 'application/pdf')).toEqual({ skipped: 'the file has no text' });
  });
});

describe('extractText: skipped files', () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

  it('images need a multimodal model, by type, extension or magic number', async () => {
    const skipped = { skipped: 'image files need a multimodal model' };
    expect(await extractText(png, 'image/png', 'a.png')).toEqual(skipped);
    expect(await extractText(png, 'application/octet-stream', 'photo.JPG')).toEqual(skipped);
    expect(await extractText(png, 'application/octet-stream')).toEqual(skipped);
    expect(await extractText(utf8('<svg/>'), 'image/svg+xml')).toEqual(skipped);
  });

  it('audio, video, unknown binary formats and empty files are skipped with a reason', async () => {
    expect(await extractText(new Uint8Array([1, 2, 3]), 'audio/mpeg')).toEqual({ skipped: 'audio and video files are not embedded' });
    expect(await extractText(new Uint8Array([0x50, 0x4b, 3, 4]), 'application/zip', 'a.zip')).toEqual({
      skipped: 'unsupported file type (application/zip)',
    });
    expect(await extractText(new Uint8Array([0, 1, 2, 0xff, 0]), 'application/octet-stream', 'blob.bin')).toEqual({
      skipped: 'unsupported file type (application/octet-stream)',
    });
    // A text type over binary bytes, e.g. a renamed archive.
    expect(await extractText(new Uint8Array([0x50, 0x4b, 3, 4, 0, 0, 0xff]), 'text/plain', 'notes.txt')).toEqual({
      skipped: 'the content is not text (declared text/plain)',
    });
    expect(await extractText(new Uint8Array(), 'text/plain')).toEqual({ skipped: 'the file has no text' });
    expect(await extractText(utf8(' \n\t '), 'text/markdown')).toEqual({ skipped: 'the file has no text' });
    expect(await extractText(utf8('[]'), 'application/json')).toEqual({ skipped: 'the file has no text' });
  });
});
