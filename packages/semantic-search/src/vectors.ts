/** Vectors as SQL text, and the similarity expression of each storage kind (vectors are L2-normalised). */
import { createHash } from 'node:crypto';

/** `{0.1,0.2}` for real[], `[0.1,0.2]` for pgvector. */
export const vectorText = (v: ArrayLike<number>, pgvector: boolean): string => {
  const body = Array.from(v, (x) => (Number.isFinite(x) ? String(x) : '0')).join(',');
  return pgvector ? `[${body}]` : `{${body}}`;
};

/**
 * Cosine similarity of column `col` (qualified) with the query parameter `param` (e.g. `$1`): pgvector's cosine
 * distance turned back into similarity, or the dot product of two normalised real[] vectors.
 */
export const similaritySql = (col: string, param: string, pgvector: boolean): string =>
  pgvector
    ? `(1 - (${col} <=> ${param}::vector))`
    : `(SELECT sum(x * y) FROM unnest(${col}, ${param}::real[]) AS u(x, y))`;

export function md5Hex(text: string): string {
  return createHash('md5').update(text).digest('hex');
}
