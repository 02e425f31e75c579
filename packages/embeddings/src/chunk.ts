import { ServiceError } from '@wds/errors';

export interface ChunkOptions {
  /** Longest chunk in UTF-16 code units; default 1000. */
  maxChars?: number;
  /** How far at most a chunk reaches back into the one before, so that no passage is cut in two; default 150 (at most maxChars / 5). Must be below maxChars / 2. */
  overlap?: number;
}

/** `content` is exactly `text.slice(start, end)`, trimmed of whitespace at both ends. */
export interface TextChunk {
  content: string;
  start: number;
  end: number;
}

export const DEFAULT_MAX_CHARS = 1000;
export const DEFAULT_OVERLAP = 150;

const PARAGRAPH = /\n[ \t]*\n/g;
/** The end of a sentence (with closing quotes or brackets) followed by whitespace, or a line break. */
const SENTENCE = /[.!?…。！？]["'”’)\]]*(?=\s)|\n/g;
const SPACE = /\s/;

/**
 * Cuts `text` into chunks of at most `maxChars`, each cut at the last paragraph break in the second half of the
 * window, else the last sentence end, else the last whitespace, else (a very long word) at `maxChars`. Each chunk
 * after the first starts up to `overlap` characters before the end of the one before, at a sentence or word start.
 * Whitespace-only text gives no chunks; no chunk is empty; every non-whitespace character is in some chunk.
 */
export function chunkText(text: string, options: ChunkOptions = {}): TextChunk[] {
  const maxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
  const overlap = options.overlap ?? Math.min(DEFAULT_OVERLAP, Math.floor(maxChars / 5));
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new ServiceError('BAD_REQUEST', 'maxChars must be a positive integer');
  if (!Number.isInteger(overlap) || overlap < 0 || overlap * 2 >= maxChars) {
    throw new ServiceError('BAD_REQUEST', 'overlap must be an integer from 0 to below maxChars / 2');
  }

  const chunks: TextChunk[] = [];
  let last = text.length;
  while (last > 0 && SPACE.test(text[last - 1]!)) last--;
  let start = skipSpace(text, 0);
  while (start < last) {
    if (last - start <= maxChars) {
      chunks.push({ content: text.slice(start, last), start, end: last });
      break;
    }
    const cut = findCut(text, start, maxChars);
    let end = cut;
    while (end > start && SPACE.test(text[end - 1]!)) end--;
    chunks.push({ content: text.slice(start, end), start, end });
    const next = overlap > 0 ? overlapStart(text, start, end, overlap) : cut;
    start = skipSpace(text, Math.max(next, start + 1));
  }
  return chunks;
}

/** Where the chunk from `start` ends (exclusive); whitespace before it is trimmed by the caller. */
function findCut(text: string, start: number, maxChars: number): number {
  const hi = start + maxChars;
  const lo = start + Math.floor(maxChars / 2);
  // Breaks are only taken in the window's second half, so that no chunk is needlessly small.
  const window = text.slice(start, hi + 1);
  const paragraph = lastMatch(PARAGRAPH, window, lo - start, maxChars, (m) => m.index);
  if (paragraph !== undefined) return start + paragraph;
  const sentence = lastMatch(SENTENCE, window, lo - start, maxChars, (m) => (m[0] === '\n' ? m.index : m.index + m[0].length));
  if (sentence !== undefined) return start + sentence;
  for (let i = hi; i > lo; i--) if (SPACE.test(text[i]!)) return i;
  const hard = avoidSplitPair(text, hi);
  return hard > start ? hard : hi;
}

/** The position `at(match)` of the last match with lo < position ≤ hi. */
function lastMatch(re: RegExp, window: string, lo: number, hi: number, at: (m: RegExpExecArray) => number): number | undefined {
  let best: number | undefined;
  re.lastIndex = 0;
  for (let m = re.exec(window); m; m = re.exec(window)) {
    const position = at(m);
    if (position > lo && position <= hi) best = position;
  }
  return best;
}

/** The start of the next chunk: the first sentence start, else word start, in the last `overlap` characters. */
function overlapStart(text: string, start: number, end: number, overlap: number): number {
  const from = Math.max(end - overlap, start + 1);
  const tail = text.slice(from, end);
  SENTENCE.lastIndex = 0;
  for (let m = SENTENCE.exec(tail); m; m = SENTENCE.exec(tail)) {
    const after = skipSpace(text, from + m.index + m[0].length);
    if (after < end) return after;
  }
  for (let i = from; i < end; i++) {
    if (!SPACE.test(text[i]!) && (i === 0 || SPACE.test(text[i - 1]!))) return i;
  }
  // Inside one long word: overlap by characters.
  return avoidSplitPair(text, from);
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && SPACE.test(text[i]!)) i++;
  return i;
}

/** Moves a cut that would fall between the two halves of a surrogate pair one back. */
function avoidSplitPair(text: string, i: number): number {
  const code = text.charCodeAt(i - 1);
  return code >= 0xd800 && code <= 0xdbff ? i - 1 : i;
}
