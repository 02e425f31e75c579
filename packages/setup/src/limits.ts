import { validationError } from '@wds/errors';

/** Content limits of the setup items (docs/setup.md#limits), counted in Unicode characters (code points). */
export const MAX_PROMPT_RULE_CHARS = 50_000;
export const MAX_SKILL_CHARS = 50_000;
export const MAX_CHAT_TEMPLATE_CHARS = 50_000;
export const MAX_TITLE_RULE_CHARS = 2_000;
export const MAX_NAME_CHARS = 255;
export const MAX_DESCRIPTION_CHARS = 10_000;

/** Unicode characters (code points), not UTF-16 units: an emoji is one character. */
export function charCount(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** At most `max` characters; cheap when the UTF-16 length already fits. */
export const withinChars = (s: string, max: number): boolean => s.length <= max || charCount(s) <= max;

export function checkText(field: string, value: string, max: number, opts: { allowEmpty?: boolean } = {}): void {
  if (!opts.allowEmpty && value.trim() === '') throw validationError(`${field}: must not be empty`);
  if (!withinChars(value, max)) throw validationError(`${field}: at most ${max} characters (got ${charCount(value)})`);
}

export interface Page {
  limit: number;
  offset: number;
}

export const iso = (d: Date): string => d.toISOString();
