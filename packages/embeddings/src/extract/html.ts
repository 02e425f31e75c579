/**
 * Readable text of HTML without a parser: drops comments, scripts, styles and other non-text elements, turns
 * block elements into line breaks, strips the remaining tags and decodes entities. Good enough to embed; not a
 * renderer (CSS visibility, for one, is ignored).
 */
export function htmlToText(html: string): string {
  const text = html
    .replace(/<!--[\s\S]*?(?:-->|$)/g, ' ')
    .replace(/<(script|style|noscript|template|svg|math|iframe|object)\b[^>]*>[\s\S]*?(?:<\/\1\s*>|$)/gi, ' ')
    .replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, '$1')
    // Whitespace in the source is just a space; line breaks come from elements.
    .replace(/\s+/g, ' ')
    .replace(/<\/?(?:p|h[1-6]|blockquote|pre|table|ul|ol|dl|section|article|header|footer|aside|nav|main|figure|form|fieldset)\b[^>]*>/gi, PARAGRAPH)
    .replace(/<\/?(?:br|div|li|tr|dt|dd|hr|title|caption|figcaption|address|details|summary|option)\b[^>]*>/gi, LINE)
    .replace(/<\/?(?:td|th)\b[^>]*>/gi, ' ')
    .replace(/<[a-zA-Z!?/][^>]*>/g, '');
  return decodeEntities(text)
    .replace(BREAKS, (run) => (run.includes(PARAGRAPH) ? '\n\n' : '\n'))
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .trim();
}

/** Markers for the breaks of block elements (private-use characters, absent from real text). */
const PARAGRAPH = '\ue000';
const LINE = '\ue001';
/** A run of breaks and spaces between them: one paragraph break if any element asked for one, else a line break. */
const BREAKS = /[ \ue000\ue001]*[\ue000\ue001][ \ue000\ue001]*/g;

/** XML: every tag separates words; the text between tags is kept, one piece a line. */
export function xmlToText(xml: string): string {
  const text = xml
    .replace(/<!--[\s\S]*?(?:-->|$)/g, ' ')
    .replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, '$1')
    .replace(/<[a-zA-Z!?/][^>]*>/g, '\n');
  return decodeEntities(text)
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n')
    .trim();
}

const NAMED: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', shy: '', ensp: ' ', emsp: ' ', thinsp: ' ',
  copy: '©', reg: '®', trade: '™', hellip: '…', mdash: '—', ndash: '–', minus: '−', lsquo: '‘', rsquo: '’',
  sbquo: '‚', ldquo: '“', rdquo: '”', bdquo: '„', laquo: '«', raquo: '»', bull: '•', middot: '·', deg: '°',
  euro: '€', pound: '£', yen: '¥', cent: '¢', sect: '§', para: '¶', times: '×', divide: '÷', plusmn: '±',
  frac12: '½', frac14: '¼', frac34: '¾', iexcl: '¡', iquest: '¿', dagger: '†', larr: '←', rarr: '→',
  uarr: '↑', darr: '↓', auml: 'ä', ouml: 'ö', uuml: 'ü', Auml: 'Ä', Ouml: 'Ö', Uuml: 'Ü', szlig: 'ß',
  eacute: 'é', egrave: 'è', ecirc: 'ê', aacute: 'á', agrave: 'à', acirc: 'â', ccedil: 'ç', ntilde: 'ñ',
  oacute: 'ó', iacute: 'í', uacute: 'ú',
};

/** Named entities from a common set, and every decimal or hexadecimal character reference. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});/g, (whole, ref: string) => {
    if (ref[0] !== '#') return NAMED[ref] ?? whole;
    const code = ref[1] === 'x' || ref[1] === 'X' ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
    const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    return valid ? String.fromCodePoint(code) : '\ufffd';
  });
}
