/** Helpers for bringing Drive content in: stored filenames, text detection, cutting text at a byte limit. */

const MAX_FILENAME = 255;

/** A Drive name made acceptable as a storage filename (checkFilename's rules), with `extension` appended if missing. */
export function storedFilename(name: string, extension = ''): string {
  let base = name
    .replace(/\p{Cc}/gu, '')
    .replace(/[/\\]/g, '_')
    .trim();
  if (base === '' || base === '.' || base === '..') base = 'drive-file';
  const wanted = extension !== '' && !base.toLowerCase().endsWith(extension) ? extension : '';
  const chars = [...base];
  if (chars.length + wanted.length > MAX_FILENAME) base = chars.slice(0, MAX_FILENAME - wanted.length).join('');
  return `${base}${wanted}`;
}

const TEXT_TYPES = ['application/json', 'application/xml', 'application/javascript', 'application/x-yaml', 'application/yaml', 'application/x-ndjson', 'application/sql', 'application/csv'];

/** Whether a binary Drive file's type is text that `read` may return. */
export function isTextType(mimeType: string): boolean {
  const type = mimeType.split(';')[0]!.trim().toLowerCase();
  return type.startsWith('text/') || TEXT_TYPES.includes(type) || type.endsWith('+json') || type.endsWith('+xml');
}

/** UTF-8 text of `bytes`, dropping a character the cut at the end split in two. */
export function utf8Prefix(bytes: Buffer): string {
  let end = bytes.length;
  // walk back over at most 3 continuation bytes to the lead byte of the last character
  for (let i = bytes.length - 1; i >= 0 && i >= bytes.length - 4; i -= 1) {
    const b = bytes[i]!;
    if ((b & 0xc0) === 0x80) continue;
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    if (i + length > bytes.length) end = i;
    break;
  }
  return bytes.subarray(0, end).toString('utf8');
}

/** The common media type shape; anything else is stored as application/octet-stream. */
export const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i;
