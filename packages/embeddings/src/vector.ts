/** Small vector helpers shared by the embedders and the store. Vectors are plain `number[]`. */

/** A unit-length copy of `v`; the zero vector stays zero (it has no direction). */
export function l2Normalise(v: ArrayLike<number>): number[] {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  const out = new Array<number>(v.length);
  for (let i = 0; i < v.length; i++) out[i] = norm > 0 ? v[i]! / norm : 0;
  return out;
}

/** The dot product; for unit vectors it is the cosine similarity. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`vectors of ${a.length} and ${b.length} dimensions`);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

/**
 * Shortest text that PostgreSQL reads back as the same `real` (9 significant digits identify a float32), so
 * that vectors travel as about 12 characters per dimension instead of 20.
 */
export function formatReal(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  return String(Number(Math.fround(x).toPrecision(9)));
}

/** `{…}`: a `real[]` literal. */
export const toRealArrayLiteral = (v: readonly number[]): string => `{${v.map(formatReal).join(',')}}`;

/** `[…]`: a pgvector literal. */
export const toVectorLiteral = (v: readonly number[]): string => `[${v.map(formatReal).join(',')}]`;
