import { validationError } from '@wds/errors';

/**
 * What to replace in a Markdown document: the body of the section under a heading (up to the next heading of the
 * same or a higher level), or a span of text that occurs exactly once.
 */
export type SectionTarget = { heading: string; content: string } | { old_text: string; new_text: string };

interface Heading {
  /** The line of the heading's text. */
  line: number;
  /** The first line after the heading (after a setext heading's underline). */
  bodyStart: number;
  level: number;
  text: string;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})(.*)$/;
const ATX = /^\s{0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const SETEXT = /^\s{0,3}(=+|-+)[ \t]*$/;

/**
 * The headings of a document outside fenced code: ATX (`## Title`) and setext (a line underlined with `===` or
 * `---`). A fence closes only with the same character, at least as long, and nothing after it.
 */
function headingsOf(lines: string[]): Heading[] {
  const found: Heading[] = [];
  let fence: string | undefined;
  let paragraph = false; // the previous line is text a setext underline would make a heading of
  lines.forEach((line, i) => {
    const f = FENCE.exec(line);
    if (fence !== undefined) {
      if (f && (f[1] as string)[0] === fence[0] && (f[1] as string).length >= fence.length && (f[2] as string).trim() === '') fence = undefined;
      return;
    }
    if (f && !((f[1] as string)[0] === '`' && (f[2] as string).includes('`'))) {
      fence = f[1] as string;
      paragraph = false;
      return;
    }
    const m = ATX.exec(line);
    if (m) {
      found.push({ line: i, bodyStart: i + 1, level: (m[1] as string).length, text: (m[2] ?? '').trim() });
      paragraph = false;
      return;
    }
    const u = SETEXT.exec(line);
    if (u && paragraph) {
      found.push({ line: i - 1, bodyStart: i + 1, level: (u[1] as string)[0] === '=' ? 1 : 2, text: (lines[i - 1] as string).trim() });
      paragraph = false;
      return;
    }
    paragraph = line.trim() !== '';
  });
  return found;
}

/** A heading as given: `## Pricing` names level and text, `Pricing` the text at any level. */
function matches(h: Heading, given: string): boolean {
  const m = /^(#{1,6})\s+(.*)$/.exec(given.trim());
  return m ? h.level === (m[1] as string).length && h.text === (m[2] as string).trim() : h.text === given.trim();
}

const occurrences = (text: string, part: string) => {
  let n = 0;
  // Overlapping ones count: `aa` occurs twice in `aaa`, and names no one place there.
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + 1)) n++;
  return n;
};

/** The content after the replacement; a target that names no place or more than one is a VALIDATION_ERROR. */
export function replaceSection(markdown: string, target: SectionTarget): string {
  if ('old_text' in target) {
    if (target.old_text === '') throw validationError('old_text: must not be empty');
    const n = occurrences(markdown, target.old_text);
    if (n !== 1) {
      throw validationError(
        n === 0 ? 'old_text: does not occur in the document' : `old_text: occurs ${n} times; include more of the surrounding text so it names one place`,
      );
    }
    const at = markdown.indexOf(target.old_text);
    return markdown.slice(0, at) + target.new_text + markdown.slice(at + target.old_text.length);
  }
  const eol = markdown.includes('\r\n') ? '\r\n' : '\n';
  const lines = markdown.split(/\r?\n/);
  const headings = headingsOf(lines);
  const hits = headings.filter((h) => matches(h, target.heading));
  if (hits.length !== 1) {
    throw validationError(
      hits.length === 0
        ? `heading: no heading "${target.heading}" in the document`
        : `heading: ${hits.length} headings read "${target.heading}"; give its level too (e.g. "## ${target.heading.replace(/^#+\s*/, '')}") or use old_text`,
    );
  }
  const hit = hits[0] as Heading;
  const next = headings.find((h) => h.line > hit.line && h.level <= hit.level);
  const body = target.content === '' ? [] : target.content.replace(/\r?\n$/, '').split(/\r?\n/);
  const after = next ? lines.slice(next.line) : [];
  // A blank line keeps the next heading apart from the new body; a document that ended with a newline still does.
  const gap = next && body.length > 0 ? [''] : [];
  const end = !next && /\n$/.test(markdown) ? [''] : [];
  return [...lines.slice(0, hit.bodyStart), ...body, ...gap, ...after, ...end].join(eol);
}
