/** Vectors as SQL text, and the similarity expression of each storage kind (vectors are L2-normalised). */

/** `{0.1,0.2}` for real[], `[0.1,0.2]` for pgvector. */
export const vectorText = (v: ArrayLike<number>, pgvector: boolean): string => {
  const body = Array.from(v, (x) => (Number.isFinite(x) ? String(x) : '0')).join(',');
  return pgvector ? `[${body}]` : `{${body}}`;
};

/**
 * Cosine similarity of column `col` (qualified) with the query parameter `param` (e.g. `$1`): pgvector's cosine
 * distance turned back into similarity, or the dot product of two normalised real[] vectors with the migration's
 * `platform.vector_dot` (the fastest of the forms measured; NULL for vectors of another size).
 */
export const similaritySql = (col: string, param: string, pgvector: boolean): string =>
  pgvector ? `(1 - (${col} <=> ${param}::vector))` : `platform.vector_dot(${col}, ${param}::real[])`;
