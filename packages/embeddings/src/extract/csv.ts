/**
 * Delimited text as one line per record, each value labelled with its column: `name: Ada; born: 1815`. Labelled
 * values embed better than bare cells, and one record per line lets the chunker cut between records.
 */
export function delimitedToText(text: string, delimiter?: ',' | ';' | '\t'): string {
  const rows = parseDelimited(text, delimiter ?? guessDelimiter(text)).filter((row) => row.some((cell) => cell.trim() !== ''));
  const [header, ...records] = rows;
  if (!header) return '';
  if (records.length === 0) return header.join(', ');
  const labels = header.map((h, i) => h.trim() || `column ${i + 1}`);
  return records
    .map((record) =>
      record
        .map((value, i) => [labels[i] ?? `column ${i + 1}`, value.trim()] as const)
        .filter(([, value]) => value !== '')
        .map(([label, value]) => `${label}: ${value.replace(/\s*\n\s*/g, ' ')}`)
        .join('; '),
    )
    .join('\n');
}

/** The most frequent of `,`, `;` and tab in the first line (outside quotes). */
function guessDelimiter(text: string): ',' | ';' | '\t' {
  const counts = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === '\n') break;
    else if (!quoted && ch in counts) counts[ch as keyof typeof counts]++;
  }
  if (counts['\t'] > counts[','] && counts['\t'] >= counts[';']) return '\t';
  return counts[';'] > counts[','] ? ';' : ',';
}

/** RFC 4180: quoted fields may hold delimiters, line breaks and doubled quotes. */
export function parseDelimited(text: string, delimiter: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch !== '"') field += ch;
      else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (ch === '"' && field === '') quoted = true;
    else if (ch === delimiter) {
      row.push(field);
      field = '';
    } else if (ch === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else if (ch !== '\r') field += ch;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}
