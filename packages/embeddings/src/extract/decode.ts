/** Bytes to text: a byte order mark wins, then the declared charset, then UTF-8; line ends become `\n`. */
export function decodeText(bytes: Uint8Array, charset?: string): string {
  let label = charset ?? 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) label = 'utf-16le';
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) label = 'utf-16be';
  else if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) label = 'utf-8';
  const decoder = (() => {
    try {
      return new TextDecoder(label);
    } catch {
      return new TextDecoder('utf-8'); // an unknown charset label
    }
  })();
  return decoder.decode(bytes).replace(/\r\n?/g, '\n').replaceAll('\u0000', '');
}
