/**
 * The JSON upload form (docs/files.md#api): `{ "filename", "content_type", "content": "<base64>", "metadata": {...} }`,
 * read in one pass without ever holding the body: the top-level object is tokenized as it streams, `content` is
 * base64-decoded on the fly and handed on as bytes (to a blob store), and the other members — small by nature,
 * capped — are collected and parsed. Member order does not matter. Anything malformed is an UploadError with a
 * message fit for a 400.
 */
import { UploadError } from './errors.js';

/** Largest JSON text of a member other than `content` (filename, content_type, metadata, …). */
const MAX_MEMBER_BYTES = 1024 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const BASE64_TEXT = /^[A-Za-z0-9+/]*={0,2}$/;
const WHITESPACE = /[\r\n\t ]/g;

export interface JsonUpload {
  /** Every member except `content`, parsed. */
  fields: Record<string, unknown>;
  /** Whether the body had a `content` member. */
  sawContent: boolean;
}

type State =
  | 'start' // before '{'
  | 'member' // before a key or '}'
  | 'key'
  | 'colon'
  | 'value'
  | 'content' // inside the content string
  | 'capture' // inside another member's value
  | 'after' // after a value: ',' or '}'
  | 'end'; // after the closing '}'

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * Parses a JSON upload body. Returns the decoded content as an async iterable of chunks, and a promise of the other
 * members that settles once the body has been read to its end (so consume the content first). The iterable throws
 * UploadError for malformed JSON or base64.
 */
export function parseJsonUpload(body: AsyncIterable<Uint8Array>): { content: AsyncIterable<Buffer>; done: Promise<JsonUpload> } {
  let resolveDone!: (u: JsonUpload) => void;
  let rejectDone!: (e: unknown) => void;
  const done = new Promise<JsonUpload>((res, rej) => {
    resolveDone = res;
    rejectDone = rej;
  });
  done.catch(() => undefined);

  async function* content(): AsyncGenerator<Buffer> {
    const fields: Record<string, unknown> = {};
    let sawContent = false;
    let state: State = 'start';
    let key: Buffer[] = [];
    let keyEscape = false;
    let currentKey = '';
    // capture of a non-content value
    let captured: Buffer[] = [];
    let capturedBytes = 0;
    let depth = 0;
    let inString = false;
    let escaped = false;
    let scalar = false;
    // content decoding
    let pending = ''; // base64 characters not yet decoded (fewer than 4 once a chunk is done)
    let contentEscape = false;
    let padded = false;

    const finishCapture = () => {
      const text = Buffer.concat(captured).toString('utf8');
      try {
        fields[currentKey] = JSON.parse(text);
      } catch {
        throw new UploadError(`${currentKey}: not valid JSON`);
      }
      captured = [];
      capturedBytes = 0;
      state = 'after';
    };

    /**
     * Decodes base64 text as it comes. Fast path: Node's decoder, checked by the decoded length (it skips what is
     * not base64, so a shorter result means whitespace or invalid characters); then the careful path strips
     * whitespace, validates and says what is wrong.
     */
    function* decode(text: string, final: boolean): Generator<Buffer> {
      const chars = pending + text;
      const usable = final ? chars.length : chars.length - (chars.length % 4);
      const head = usable === chars.length ? chars : chars.slice(0, usable);
      if (head.length > 0 && !padded) {
        const pad = head.endsWith('==') ? 2 : head.endsWith('=') ? 1 : 0;
        const out = Buffer.from(head, 'base64');
        if (out.length === Math.floor((head.length * 3) / 4) - pad && head.length % 4 !== 1) {
          pending = chars.slice(usable);
          if (pad > 0) padded = true;
          yield out;
          return;
        }
      }
      yield* decodeCarefully(text, final);
    }

    function* decodeCarefully(text: string, final: boolean): Generator<Buffer> {
      const fresh = text.search(WHITESPACE) >= 0 ? text.replace(WHITESPACE, '') : text;
      if (padded && /[^=]/.test(fresh)) throw new UploadError('content: base64 continues after its padding');
      let chars = pending + fresh;
      if (!BASE64_TEXT.test(chars)) {
        throw new UploadError(
          /=[^=]/.test(chars) ? 'content: base64 continues after its padding' : 'content: not valid base64 (characters outside A-Z a-z 0-9 + / =)',
        );
      }
      if (fresh.includes('=')) padded = true;
      const usable = final ? chars.length : chars.length - (chars.length % 4);
      if (final && chars.replace(/=+$/, '').length % 4 === 1) throw new UploadError('content: truncated base64');
      pending = chars.slice(usable);
      chars = chars.slice(0, usable);
      if (chars.length > 0) yield Buffer.from(chars, 'base64');
    }

    for await (const raw of body) {
      const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      let i = 0;
      while (i < chunk.length) {
        if (state === 'content') {
          // Fast path: find the end of the string (or the next escape) natively and decode the run before it.
          if (contentEscape) {
            const c = chunk[i] as number;
            contentEscape = false;
            i++;
            if (c === 0x2f) yield* decode('/', false);
            else if (c === 0x6e || c === 0x72 || c === 0x74) {
              // \n \r \t: line breaks of MIME-style base64
            } else throw new UploadError('content: unexpected escape in base64 text');
            continue;
          }
          const q = chunk.indexOf(QUOTE, i);
          const b = chunk.indexOf(BACKSLASH, i);
          const stop = q < 0 ? b : b < 0 ? q : Math.min(q, b);
          const end = stop < 0 ? chunk.length : stop;
          if (end > i) yield* decode(chunk.toString('latin1', i, end), false);
          if (stop < 0) {
            i = chunk.length;
          } else if (stop === b) {
            contentEscape = true;
            i = stop + 1;
          } else {
            yield* decode('', true);
            state = 'after';
            i = stop + 1;
          }
          continue;
        }
        const c = chunk[i] as number;
        switch (state) {
          case 'start':
            if (isSpace(c)) break;
            if (c !== 0x7b) throw new UploadError('the body must be a JSON object');
            state = 'member';
            break;
          case 'member':
            if (isSpace(c)) break;
            if (c === 0x7d) state = 'end';
            else if (c === QUOTE) {
              state = 'key';
              key = [];
            } else throw new UploadError('malformed JSON: expected a member name');
            break;
          case 'key': {
            const q = keyEscape ? -1 : c === QUOTE ? i : -1;
            if (keyEscape) keyEscape = false;
            else if (c === BACKSLASH) keyEscape = true;
            if (q === i) {
              try {
                currentKey = JSON.parse(`"${Buffer.concat(key).toString('utf8')}"`) as string;
              } catch {
                throw new UploadError('malformed JSON: a member name is not a valid string');
              }
              state = 'colon';
            } else {
              key.push(chunk.subarray(i, i + 1));
              if (key.length > 1024) throw new UploadError('malformed JSON: member name too long');
            }
            break;
          }
          case 'colon':
            if (isSpace(c)) break;
            if (c !== 0x3a) throw new UploadError('malformed JSON: expected ":"');
            state = 'value';
            break;
          case 'value':
            if (isSpace(c)) break;
            if (currentKey === 'content') {
              if (sawContent) throw new UploadError('content: given twice');
              if (c !== QUOTE) throw new UploadError('content: must be a base64 string');
              sawContent = true;
              state = 'content';
              break;
            }
            if (currentKey in fields) throw new UploadError(`${currentKey}: given twice`);
            state = 'capture';
            captured = [];
            capturedBytes = 0;
            depth = 0;
            inString = false;
            escaped = false;
            scalar = !(c === 0x7b || c === 0x5b || c === QUOTE);
            continue; // reprocess this byte in capture
          case 'capture': {
            // Scan to the end of the value: strings (with escapes), nesting, or a scalar ended by , } or space.
            let j = i;
            for (; j < chunk.length; j++) {
              const d = chunk[j] as number;
              if (inString) {
                if (escaped) escaped = false;
                else if (d === BACKSLASH) escaped = true;
                else if (d === QUOTE) {
                  inString = false;
                  if (depth === 0) {
                    j++;
                    break;
                  }
                }
              } else if (scalar) {
                if (d === 0x2c || d === 0x7d || isSpace(d)) break;
              } else if (d === QUOTE) inString = true;
              else if (d === 0x7b || d === 0x5b) depth++;
              else if (d === 0x7d || d === 0x5d) {
                depth--;
                if (depth === 0) {
                  j++;
                  break;
                }
              }
            }
            captured.push(Buffer.from(chunk.subarray(i, j)));
            capturedBytes += j - i;
            if (capturedBytes > MAX_MEMBER_BYTES) throw new UploadError(`${currentKey}: larger than ${MAX_MEMBER_BYTES} bytes`);
            const ended = j < chunk.length || (!scalar && !inString && depth === 0 && capturedBytes > 0);
            i = j;
            if (ended && (j < chunk.length || !scalar)) finishCapture();
            continue;
          }
          case 'after':
            if (isSpace(c)) break;
            if (c === 0x2c) state = 'member';
            else if (c === 0x7d) state = 'end';
            else throw new UploadError('malformed JSON: expected "," or "}"');
            break;
          case 'end':
            if (!isSpace(c)) throw new UploadError('malformed JSON: data after the object');
            break;
        }
        i++;
      }
    }
    if (state === 'capture' && scalar && capturedBytes > 0) finishCapture();
    if (state !== 'end') throw new UploadError('malformed JSON: the body ended early');
    resolveDone({ fields, sawContent });
  }

  return {
    content: (async function* () {
      try {
        yield* content();
      } catch (err) {
        rejectDone(err);
        throw err;
      }
    })(),
    done,
  };
}
