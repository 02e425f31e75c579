import { diffLines } from 'diff';

interface Line {
  kind: 'added' | 'removed' | 'same';
  text: string;
}

/** The lines of two texts, each marked added, removed or unchanged (the `diff` package's diffLines). */
export function lineDiff(before: string, after: string): Line[] {
  const lines: Line[] = [];
  for (const change of diffLines(before, after)) {
    const kind = change.added ? 'added' : change.removed ? 'removed' : 'same';
    const parts = change.value.split('\n');
    if (parts.at(-1) === '') parts.pop();
    for (const text of parts) lines.push({ kind, text });
  }
  return lines;
}

const PREFIX = { added: '+ ', removed: '− ', same: '  ' } as const;

/**
 * A line diff: added lines start with "+", removed ones with "−" (text, not colour alone; the colour helps), and a
 * summary says how many of each.
 */
export function LineDiff({ before, after, label }: { before: string; after: string; label: string }) {
  const lines = lineDiff(before, after);
  const added = lines.filter((l) => l.kind === 'added').length;
  const removed = lines.filter((l) => l.kind === 'removed').length;
  return (
    <figure class="diff">
      <figcaption>
        {label}: {added} {added === 1 ? 'line' : 'lines'} added, {removed} removed.
      </figcaption>
      <pre>
        {lines.map((l, i) => (
          <span key={i} class={`line ${l.kind}`} dir="auto">
            {PREFIX[l.kind]}
            {l.text}
            {'\n'}
          </span>
        ))}
      </pre>
    </figure>
  );
}
