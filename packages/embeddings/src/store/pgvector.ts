/**
 * The optional pgvector path: a `vector(<dims>)` copy of each chunk's embedding in `embedding_v`, with an HNSW
 * index for cosine distance. Everything else works without it (exact search over `real[]`).
 */
import { type Database, sql } from '@wds/db';
import { ServiceError } from '@wds/errors';
import type { Kysely } from 'kysely';

/** pgvector's HNSW index takes `vector` columns of up to 2000 dimensions. */
export const HNSW_MAX_DIMENSIONS = 2000;
const INDEX = 'embedding_chunks_embedding_v_hnsw';
/** Serialises concurrent `ensureVectorIndex` calls across processes. */
const LOCK_KEY = 7_006_001;

/**
 * Whether the vector path can be used: pgvector is installed, or it is available and this role may install it
 * (`CREATE EXTENSION IF NOT EXISTS vector`), and its type is on the search path. Never throws.
 */
export async function detectVectorSupport(db: Kysely<Database>): Promise<boolean> {
  try {
    const { rows } = await sql<{ installed: boolean; available: boolean }>`
      SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AS installed,
             EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available`.execute(db);
    const { installed, available } = rows[0]!;
    if (!installed && !available) return false;
    if (!installed) {
      // Another process may create it at the same moment; then this fails and the check below still succeeds.
      await sql`CREATE EXTENSION IF NOT EXISTS vector`.execute(db).catch(() => {});
    }
    const found = await sql<{ ok: boolean }>`SELECT to_regtype('vector') IS NOT NULL AS ok`.execute(db);
    return found.rows[0]?.ok === true;
  } catch {
    return false;
  }
}

/** The dimensions of the `embedding_v` column of platform.embedding_chunks, or null when it does not exist. */
export async function vectorColumnDimensions(db: Kysely<Database>): Promise<number | null> {
  const { rows } = await sql<{ dims: number }>`
    SELECT atttypmod AS dims FROM pg_attribute
    WHERE attrelid = 'platform.embedding_chunks'::regclass AND attname = 'embedding_v' AND NOT attisdropped`.execute(db);
  return rows[0] ? rows[0].dims : null;
}

/**
 * Makes `embedding_v vector(<dimensions>)` and its HNSW index (vector_cosine_ops) exist, filling the column from
 * the stored `real[]` embeddings of that size. Call it at start-up with the embedder's dimensions, after
 * `detectVectorSupport` said yes.
 *
 * When the column exists with other dimensions (the embedder changed), it is dropped and rebuilt: chunks of the
 * new size get vectors and the index, chunks of the old size keep only their `real[]` (search them with
 * `useVector: false`, or better re-embed them). Above 2000 dimensions the column is created without an index.
 */
export async function ensureVectorIndex(db: Kysely<Database>, dimensions: number): Promise<'created' | 'unchanged' | 'rebuilt'> {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 16_000) {
    throw new ServiceError('INTERNAL_ERROR', `Cannot index vectors of ${dimensions} dimensions`);
  }
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
    const current = await vectorColumnDimensions(trx);
    const dims = sql.raw(String(dimensions));
    const index = sql.raw(INDEX);
    if (current !== dimensions) {
      if (current !== null) {
        await sql`DROP INDEX IF EXISTS platform.${index}`.execute(trx);
        await sql`ALTER TABLE platform.embedding_chunks DROP COLUMN embedding_v`.execute(trx);
      }
      await sql`ALTER TABLE platform.embedding_chunks ADD COLUMN embedding_v vector(${dims})`.execute(trx);
      await sql`
        UPDATE platform.embedding_chunks SET embedding_v = embedding::vector(${dims})
        WHERE array_length(embedding, 1) = ${dimensions}`.execute(trx);
    }
    if (dimensions <= HNSW_MAX_DIMENSIONS) {
      await sql`
        CREATE INDEX IF NOT EXISTS ${index} ON platform.embedding_chunks
        USING hnsw (embedding_v vector_cosine_ops)`.execute(trx);
    }
    if (current === dimensions) return 'unchanged';
    return current === null ? 'created' : 'rebuilt';
  });
}
