/**
 * The readable values of a JSON value, one `path: value` line each: `{"user":{"name":"Ada"},"tags":["a","b"]}`
 * gives `user.name: Ada` and `tags: a, b`. The records of a top-level array are separated by a blank line so
 * that the chunker prefers to cut between them. Also suited to a table row.
 */
export function jsonToText(value: unknown): string {
  if (Array.isArray(value) && value.some(isContainer)) {
    return value
      .map((record) => lines(record, '').join('\n'))
      .filter((text) => text !== '')
      .join('\n\n');
  }
  return lines(value, '').join('\n');
}

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null;

function scalar(v: unknown): string | undefined {
  if (typeof v === 'string') return v.trim() === '' ? undefined : v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return undefined;
}

function lines(value: unknown, path: string): string[] {
  const label = (text: string) => (path ? `${path}: ${text}` : text);
  if (Array.isArray(value)) {
    const scalars = value.filter((v) => !isContainer(v)).map(scalar).filter((s) => s !== undefined);
    const out = scalars.length > 0 ? [label(scalars.join(', '))] : [];
    // The items of an array of objects keep the array's path: `items.name: …` reads better than `items[3].name`.
    for (const item of value) if (isContainer(item)) out.push(...lines(item, path));
    return out;
  }
  if (isContainer(value)) {
    return Object.entries(value).flatMap(([key, v]) => lines(v, path ? `${path}.${key}` : key));
  }
  const text = scalar(value);
  return text === undefined ? [] : [label(text)];
}
