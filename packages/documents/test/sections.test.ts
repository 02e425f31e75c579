import { describe, expect, test } from 'vitest';
import { replaceSection } from '../src/sections.js';

/** The details of the VALIDATION_ERROR a call throws. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as { code: string; details: string }).code === 'VALIDATION_ERROR' ? (err as { details: string }).details : String(err);
  }
  return 'no error';
}

const doc = ['# Plan', '', 'Intro.', '', '## Pricing', '', 'Old price.', '', '### Detail', 'Fine print.', '', '## Risks', '', 'Some.', ''].join('\n');

describe('replaceSection', () => {
  test('a heading with its level replaces its body up to the next heading of the same or a higher level', () => {
    const out = replaceSection(doc, { heading: '## Pricing', content: 'New price.\n' });
    expect(out).toBe(['# Plan', '', 'Intro.', '', '## Pricing', 'New price.', '', '## Risks', '', 'Some.', ''].join('\n'));
  });

  test('a heading by its text alone; the last section runs to the end and keeps the final newline', () => {
    expect(replaceSection(doc, { heading: 'Risks', content: 'None.' })).toBe(`${doc.slice(0, doc.indexOf('## Risks'))}## Risks\nNone.\n`);
  });

  test('a lower-level heading ends at the next heading of any level at or above it', () => {
    const out = replaceSection(doc, { heading: 'Detail', content: 'Finer print.' });
    expect(out).toContain('### Detail\nFiner print.\n\n## Risks');
    expect(out).toContain('Old price.');
  });

  test('headings inside fenced code are not headings', () => {
    const md = '# A\n```\n# not a heading\n```\ntext\n# B\nb\n';
    expect(replaceSection(md, { heading: 'A', content: 'x' })).toBe('# A\nx\n\n# B\nb\n');
  });

  test('old_text must occur exactly once', () => {
    expect(replaceSection(doc, { old_text: 'Old price.', new_text: 'New.' })).toContain('## Pricing\n\nNew.\n');
    expect(refusal(() => replaceSection(doc, { old_text: 'nowhere', new_text: '' }))).toMatch(/does not occur/);
    expect(refusal(() => replaceSection('a a', { old_text: 'a', new_text: 'b' }))).toMatch(/occurs 2 times/);
    expect(refusal(() => replaceSection(doc, { old_text: '', new_text: 'b' }))).toMatch(/must not be empty/);
  });

  test('a missing or ambiguous heading is refused with what to do', () => {
    expect(refusal(() => replaceSection(doc, { heading: 'Nope', content: '' }))).toMatch(/no heading/);
    expect(refusal(() => replaceSection('# X\n## X\n', { heading: 'X', content: '' }))).toMatch(/give its level/);
    expect(replaceSection('# X\n## X\ny\n', { heading: '## X', content: 'z' })).toBe('# X\n## X\nz\n');
  });
  test('setext headings are headings: a section ends at one, and one can be replaced', () => {
    const md = '# A\nold\n\nB\n===\nkeep me\n';
    expect(replaceSection(md, { heading: 'A', content: 'new' })).toBe('# A\nnew\n\nB\n===\nkeep me\n');
    // A level-2 setext heading under a level-1 one is its subsection, as `## B` would be.
    expect(replaceSection('# A\nold\n\nB\n---\nsub\n', { heading: 'B', content: 'new' })).toBe('# A\nold\n\nB\n---\nnew\n');
    expect(replaceSection('Title\n=====\nx\n\n## Sub\ny\n', { heading: '# Title', content: 'z' })).toBe('Title\n=====\nz\n');
    // After a blank line `---` is a thematic break, not a heading.
    expect(replaceSection('# A\nx\n\n---\ny\n', { heading: 'A', content: 'z' })).toBe('# A\nz\n');
  });

  test('a fence closes only with the same character, at least as long, and nothing after it', () => {
    const md = '# A\n````\n```\n# inside\n```\n````\n# B\nb\n';
    expect(replaceSection(md, { heading: 'A', content: 'x' })).toBe('# A\nx\n\n# B\nb\n');
    expect(refusal(() => replaceSection(md, { heading: 'inside', content: 'x' }))).toMatch(/no heading/);
  });

  test('overlapping occurrences of old_text count', () => {
    expect(refusal(() => replaceSection('aaa', { old_text: 'aa', new_text: 'b' }))).toMatch(/occurs 2 times/);
  });
});
