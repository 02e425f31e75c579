/**
 * Semantic search over stored chunks: the best chunk of each item, items ordered by cosine similarity. Two paths
 * answer the same question: an exact scan with platform.vector_dot over `real[]` (any PostgreSQL) — done in process by
 * an ExactVectorIndex when one is given —, and pgvector's HNSW index over `embedding_v` (approximate; as wide as
 * `efSearch` makes it).
 */
import { type Database, type EmbeddingSurface, isUuid, sql } from '@wds/db';
import type { Kysely, RawBuilder } from 'kysely';
import type { ExactVectorIndex } from '../exact-index/vector-index.js';
import { l2Normalise, toRealArrayLiteral, toVectorLiteral } from '../vector.js';
import { vectorColumnDimensions } from './pgvector.js';

export interface SearchOptions {
  workspaceId: string;
  surface: EmbeddingSurface;
  /** The query's embedding, from the same embedder as the stored chunks; normalised here. */
  vector: number[];
  /** Items to return, at most. */
  limit: number;
  /** Only items of these files; an empty list matches nothing. */
  fileIds?: string[];
  /** Only items of these tables; an empty list matches nothing. */
  tableNames?: string[];
  /** Only chunks embedded by this model (chunks of another size never match anyway). */
  model?: string;
  /**
   * Use the pgvector index when `embedding_v` exists with the query's dimensions; otherwise (or when false) scan
   * exactly. Pass the result of `detectVectorSupport`.
   */
  useVector: boolean;
  /**
   * With pgvector, a workspace surface of at most this many chunks is scanned exactly with pgvector's native distance
   * (fast at that size, and exact); larger ones go through the HNSW index. Default EXACT_SCAN_MAX_CHUNKS; 0 always
   * uses the index.
   */
  exactScanMaxChunks?: number;
  /**
   * How widely the HNSW index searches (hnsw.ef_search, at most 1000): wider is nearer the exact answer and slower.
   * Default 1000 (pgvector's limit). Raised to the number of candidates wanted when that is larger.
   */
  efSearch?: number;
  /**
   * The process's in-memory index for the exact path (when pgvector is not used): the same answer as the SQL scan,
   * scored in worker threads over vectors loaded once per surface and change. Without it, or when it declines (a
   * surface over its memory limit), PostgreSQL scans.
   */
  index?: ExactVectorIndex;
}

export interface SearchHit {
  item_id: string;
  chunk_index: number;
  content: string;
  /** Cosine similarity, from -1 to 1. */
  score: number;
  file_id: string | null;
  table_name: string | null;
  row_id: string | null;
  column_name: string | null;
}

/**
 * Both paths first ask for the nearest chunks (at least this many) and keep each item's first, that is best, chunk.
 * When chunks of the same items crowd out other items, the exact path scans once more for every item's best chunk;
 * the indexed path asks for four times as many candidates, up to MAX_CANDIDATES.
 */
const MIN_CANDIDATES = 100;
const MAX_CANDIDATES = 40_000;
/**
 * pgvector's default hnsw.ef_search is 40. Recall@10 over 10k vectors of 384-d at 100: 100% when they cluster,
 * 64% when uniformly random (84% at 200, 100% at 1000); bench:embeddings on hashed sentences: 0.92 at 10k and 0.78 at
 * 100k rows at 100, 0.91 at 100k at 400. It must be at least the candidates wanted, and 1000 is pgvector's limit.
 */
const DEFAULT_EF_SEARCH = 1000;
/**
 * HNSW is approximate: bench:embeddings measured recall@10 of 0.92 (10k) and 0.78 (100k) at ef_search 100 on hashed
 * sentences. A workspace's own chunks are few enough to scan exactly far more often than not, and pgvector's native
 * distance makes that cheap, so the index is used only above this many chunks (and then at ef_search 1000).
 */
export const EXACT_SCAN_MAX_CHUNKS = 50_000;
const MAX_EF_SEARCH = 1000;

/**
 * The best-matching chunk of each item of one workspace and surface, best first (ties by item id). A zero query
 * vector (a blank query) matches nothing.
 */
export async function searchChunks(db: Kysely<Database>, options: SearchOptions): Promise<SearchHit[]> {
  const limit = Math.floor(options.limit);
  const vector = l2Normalise(options.vector);
  if (limit < 1 || vector.every((x) => x === 0) || !isUuid(options.workspaceId)) return [];
  if (options.useVector) {
    const hits = await db.transaction().execute(async (trx) => {
      if ((await vectorColumnDimensions(trx)) !== vector.length) return null;
      return indexedSearch(trx, options, vector, limit);
    });
    if (hits) return hits;
  }
  return (await options.index?.search(options, vector, limit)) ?? exactSearch(db, options, vector, limit);
}

function itemConditions(options: SearchOptions): RawBuilder<unknown> {
  const conditions = [sql`c.workspace_id = ${options.workspaceId}`, sql`i.surface = ${options.surface}`];
  if (options.fileIds) conditions.push(sql`i.file_id = ANY(${options.fileIds.filter(isUuid)}::uuid[])`);
  if (options.tableNames) conditions.push(sql`i.table_name = ANY(${options.tableNames}::text[])`);
  if (options.model !== undefined) conditions.push(sql`i.model = ${options.model}`);
  return sql.join(conditions, sql` AND `);
}

/** The first (best) chunk of each item among chunks ordered best first, items best first, at most `limit`. */
function bestPerItem(chunks: SearchHit[], limit: number): SearchHit[] {
  const best = new Map<string, SearchHit>();
  for (const hit of chunks) if (hit.score !== null && !best.has(hit.item_id)) best.set(hit.item_id, hit);
  return [...best.values()]
    .sort((a, b) => b.score - a.score || (a.item_id < b.item_id ? -1 : a.item_id > b.item_id ? 1 : 0))
    .slice(0, limit);
}

async function exactSearch(db: Kysely<Database>, options: SearchOptions, vector: number[], limit: number): Promise<SearchHit[]> {
  // A top-N sort over all chunks runs in parallel workers; the complete best-per-item query below does not, and
  // takes twice as long (10k x 384-d: ~350 against ~750 ms on 2 cores).
  const candidates = Math.max(limit * 4, MIN_CANDIDATES);
  const nearest = await nearestChunksExact(options, vector, candidates).execute(db);
  const hits = bestPerItem(nearest.rows, limit);
  if (hits.length >= limit || nearest.rows.length < candidates) return hits;
  const { rows } = await sql<SearchHit>`
    WITH scored AS (
      SELECT c.item_id, c.chunk_index, platform.vector_dot(c.embedding, ${toRealArrayLiteral(vector)}::real[]) AS score
      FROM platform.embedding_chunks c
      JOIN platform.embedding_items i ON i.id = c.item_id
      WHERE ${itemConditions(options)}
    ), best AS (
      SELECT DISTINCT ON (item_id) item_id, chunk_index, score
      FROM scored
      WHERE score IS NOT NULL
      ORDER BY item_id, score DESC, chunk_index
    ), top AS (
      SELECT * FROM best ORDER BY score DESC, item_id LIMIT ${limit}
    )
    SELECT t.item_id, t.chunk_index, c.content, t.score, i.file_id, i.table_name, i.row_id, i.column_name
    FROM top t
    JOIN platform.embedding_chunks c ON c.item_id = t.item_id AND c.chunk_index = t.chunk_index
    JOIN platform.embedding_items i ON i.id = t.item_id
    ORDER BY t.score DESC, t.item_id`.execute(db);
  return rows;
}

/** Nearest chunks by the HNSW index; if the first candidates cover too few items, more are asked for. */
async function indexedSearch(trx: Kysely<Database>, options: SearchOptions, vector: number[], limit: number): Promise<SearchHit[]> {
  const exactMax = options.exactScanMaxChunks ?? EXACT_SCAN_MAX_CHUNKS;
  if (exactMax > 0) {
    const { rows: counted } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM (
        SELECT 1 FROM platform.embedding_chunks c JOIN platform.embedding_items i ON i.id = c.item_id
        WHERE ${itemConditions(options)} AND c.embedding_v IS NOT NULL LIMIT ${exactMax + 1}) few`.execute(trx);
    if (Number(counted[0]?.n ?? 0) <= exactMax) {
      // Every chunk of the surface is scored, so asking for all of them at most gives the exact answer.
      for (let candidates = Math.max(limit * 4, MIN_CANDIDATES); ; candidates *= 4) {
        const nearest = await nearestChunks(options, vector, candidates, { exact: true }).execute(trx);
        const hits = bestPerItem(nearest.rows, limit);
        if (hits.length >= limit || nearest.rows.length < candidates) return hits;
      }
    }
  }
  // pgvector 0.8 can continue an index scan past ef_search until the filters let enough rows through.
  const { rows } = await sql<{ iterative: boolean }>`
    SELECT string_to_array(extversion, '.')::int[] >= '{0,8}'::int[] AS iterative
    FROM pg_extension WHERE extname = 'vector'`.execute(trx);
  if (rows[0]?.iterative) await sql`SELECT set_config('hnsw.iterative_scan', 'strict_order', true)`.execute(trx);

  for (let candidates = Math.max(limit * 4, MIN_CANDIDATES); ; candidates *= 4) {
    const efSearch = Math.min(Math.max(candidates, options.efSearch ?? DEFAULT_EF_SEARCH), MAX_EF_SEARCH);
    await sql`SELECT set_config('hnsw.ef_search', ${String(efSearch)}, true)`.execute(trx);
    const nearest = await nearestChunks(options, vector, candidates).execute(trx);
    const hits = bestPerItem(nearest.rows, limit);
    if (hits.length >= limit || nearest.rows.length < candidates || candidates >= MAX_CANDIDATES) return hits;
  }
}

const SELECTED = sql`c.item_id, c.chunk_index, c.content, i.file_id, i.table_name, i.row_id, i.column_name`;

/**
 * The nearest chunks by exact scan; chunks of another size score NULL and come last. Ties go to the lower item id,
 * then chunk index, so that these candidates give the same answer as the complete query (and as ExactVectorIndex).
 */
function nearestChunksExact(options: SearchOptions, vector: number[], candidates: number) {
  return sql<SearchHit>`
    SELECT ${SELECTED}, platform.vector_dot(c.embedding, ${toRealArrayLiteral(vector)}::real[]) AS score
    FROM platform.embedding_chunks c
    JOIN platform.embedding_items i ON i.id = c.item_id
    WHERE ${itemConditions(options)}
    ORDER BY score DESC NULLS LAST, c.item_id, c.chunk_index
    LIMIT ${candidates}`;
}

/**
 * The nearest chunks by the HNSW index (exported for tests that check its plan), or with `exact` by scoring every
 * chunk with pgvector's distance (an ORDER BY the index cannot serve).
 */
export function nearestChunks(options: SearchOptions, vector: number[], candidates: number, opts: { exact?: boolean } = {}) {
  const query = sql`${toVectorLiteral(l2Normalise(vector))}::vector`;
  // Ordered by distance alone so that the HNSW index can deliver the order; ties are broken afterwards.
  const order = opts.exact ? sql`(c.embedding_v <=> ${query}) + 0` : sql`c.embedding_v <=> ${query}`;
  return sql<SearchHit>`
    SELECT ${SELECTED}, 1 - (c.embedding_v <=> ${query}) AS score
    FROM platform.embedding_chunks c
    JOIN platform.embedding_items i ON i.id = c.item_id
    WHERE ${itemConditions(options)} AND c.embedding_v IS NOT NULL
    ORDER BY ${order}
    LIMIT ${candidates}`;
}
