/**
 * The exact search of `searchChunks` without pgvector, in process: each workspace surface's vectors of one size are
 * loaded once into shared memory and scored by worker threads, instead of PostgreSQL scoring every chunk with
 * platform.vector_dot on every query. Answers are the SQL path's: same items, order, chunks and scores.
 *
 * Current across processes: a search reads the surface's generation (bumped by triggers in the transaction of every
 * chunk change, migration 0011) and reloads its copy when the generation moved past it. The winners' content is then
 * read from the database by row version (xmin), so what is returned is what was scored; if a winner changed in the
 * meantime the search starts over. Memory is bounded by `maxBytes` (least recently used surfaces are dropped); a
 * surface larger than that, or one without a generation, is searched in SQL (the caller's fallback).
 */
import { availableParallelism } from 'node:os';
import { type EmbeddingSurface, isUuid } from '@wds/db';
import type pg from 'pg';
import type { SearchHit, SearchOptions } from '../store/search.js';
import { type LoadOutcome, type LoadedSurface, SURFACES, type SurfaceKey, WINDOW_ROWS, loadSurface } from './load.js';
import { type ScanJob, ScanThreads, mergeCandidates } from './scan-threads.js';

export const DEFAULT_INDEX_MAX_BYTES = 512 * 1024 * 1024;
/** Below this many multiply-adds a slice is not worth another thread (about 0.1 ms). */
const MIN_SLICE_WORK = 1 << 18;
/** A winner replaced between its copy's load and the read of its content makes the search start over, this often. */
const ATTEMPTS = 3;
/** Surfaces known to be too large are remembered (by generation) so they are not counted on every search. */
const MAX_TOO_BIG = 1000;

export interface ExactVectorIndexOptions {
  /** The service's pool (`createDb(…).pool`): a load holds one of its connections for a COPY. */
  pool: Pick<pg.Pool, 'connect' | 'query'>;
  /** Memory the copies may take in all, in bytes (see `surfaceBytes`); 0 turns the index off. Default 512 MiB. */
  maxBytes?: number;
  /** Scan threads. Default: the cores, at most 4. */
  threads?: number;
  /** Told when a load or scan failed; that search then runs in SQL. */
  onError?: (err: unknown, surface: { workspaceId: string; surface: EmbeddingSurface }) => void;
}

export interface ExactVectorIndexStats {
  /** Copies loaded since start. */
  loads: number;
  /** Searches answered from a copy that was already current. */
  hits: number;
  /** Searches left to SQL (too large, no generation, no room, or a failure). */
  fallbacks: number;
  /** Copies held now, and their bytes. */
  surfaces: number;
  bytes: number;
  maxBytes: number;
  threads: number;
}

interface Entry {
  generation: number;
  surface: LoadedSurface;
}

export class ExactVectorIndex {
  readonly maxBytes: number;
  private readonly pool: ExactVectorIndexOptions['pool'];
  private readonly threads: ScanThreads;
  private readonly onError: ExactVectorIndexOptions['onError'];
  /** Least recently used first (a Map keeps insertion order; a use moves the entry to the end). */
  private readonly entries = new Map<string, Entry>();
  private readonly tooBig = new Map<string, number>();
  private readonly loading = new Map<string, Promise<LoadOutcome>>();
  /** Bytes of the entries and of the loads in progress. */
  private bytes = 0;
  private closed = false;
  private readonly counts = { loads: 0, hits: 0, fallbacks: 0 };

  constructor(options: ExactVectorIndexOptions) {
    this.pool = options.pool;
    this.maxBytes = Math.max(0, Math.floor(options.maxBytes ?? DEFAULT_INDEX_MAX_BYTES));
    this.threads = new ScanThreads(options.threads ?? Math.max(1, Math.min(4, availableParallelism())));
    this.onError = options.onError;
  }

  /**
   * The best chunk of each item, best first, as `searchChunks`' exact path answers; null when the caller should
   * search in SQL. `vector` is the normalised query, `limit` at least 1.
   */
  async search(options: SearchOptions, vector: readonly number[], limit: number): Promise<SearchHit[] | null> {
    if (this.closed || this.maxBytes === 0 || !SURFACES.includes(options.surface) || !isUuid(options.workspaceId)) {
      return this.fallback();
    }
    const key: SurfaceKey = { workspaceId: options.workspaceId.toLowerCase(), surface: options.surface, dims: vector.length };
    try {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const generation = await this.generation(key);
        if (generation === null) return this.fallback();
        const surface = await this.current(key, generation);
        if (!surface) return this.fallback();
        const hits = await this.read(surface, await this.rank(surface, options, vector, limit));
        if (hits) return hits;
      }
      return this.fallback();
    } catch (err) {
      this.onError?.(err, key);
      return this.fallback();
    }
  }

  stats(): ExactVectorIndexStats {
    return { ...this.counts, surfaces: this.entries.size, bytes: this.bytes, maxBytes: this.maxBytes, threads: this.threads.threads };
  }

  /** Drops every copy and terminates the scan threads; later searches run in SQL. */
  async close(): Promise<void> {
    this.closed = true;
    for (const entry of this.entries.values()) this.bytes -= entry.surface.bytes;
    this.entries.clear();
    this.tooBig.clear();
    await this.threads.close();
  }

  private fallback(): null {
    this.counts.fallbacks++;
    return null;
  }

  private async generation(key: SurfaceKey): Promise<number | null> {
    const { rows } = await this.pool.query<{ generation: string }>(
      'SELECT generation::text AS generation FROM platform.embedding_generations WHERE workspace_id = $1 AND surface = $2',
      [key.workspaceId, key.surface],
    );
    return rows[0] ? Number(rows[0].generation) : null;
  }

  /** A copy at `generation` or later: the cached one, one being loaded, or a new load. Null: search in SQL. */
  private async current(key: SurfaceKey, generation: number): Promise<LoadedSurface | null> {
    const id = `${key.workspaceId}/${key.surface}/${key.dims}`;
    for (;;) {
      const cached = this.entries.get(id);
      if (cached && cached.generation >= generation) {
        this.entries.delete(id);
        this.entries.set(id, cached);
        this.counts.hits++;
        return cached.surface;
      }
      if ((this.tooBig.get(id) ?? -1) >= generation) return null;
      // Concurrent searches of a surface share one load; a load that began before `generation` was read may be
      // older than it, and then the next turn loads again.
      let loading = this.loading.get(id);
      if (!loading) {
        loading = this.load(id, key).finally(() => this.loading.delete(id));
        this.loading.set(id, loading);
      }
      const outcome = await loading;
      if (outcome.kind !== 'loaded') return null;
      if (outcome.surface.generation >= generation) return outcome.surface;
    }
  }

  private async load(id: string, key: SurfaceKey): Promise<LoadOutcome> {
    // An older copy of the same surface is of no more use: its memory goes to the new one.
    const stale = this.entries.get(id);
    if (stale) {
      this.entries.delete(id);
      this.bytes -= stale.surface.bytes;
    }
    let reserved = 0;
    try {
      const outcome = await loadSurface(this.pool, key, this.threads.threads, (bytes) => {
        if (bytes > this.maxBytes || this.closed) return false;
        this.makeRoom(bytes);
        if (this.bytes + bytes > this.maxBytes) return false;
        this.bytes += bytes;
        reserved = bytes;
        return true;
      });
      if (outcome.kind === 'loaded' && !this.closed) {
        this.counts.loads++;
        this.bytes += outcome.surface.bytes;
        this.entries.set(id, { generation: outcome.surface.generation, surface: outcome.surface });
        this.tooBig.delete(id);
      } else if (outcome.kind === 'refused' && outcome.bytes > this.maxBytes) {
        this.tooBig.delete(id);
        this.tooBig.set(id, outcome.generation);
        if (this.tooBig.size > MAX_TOO_BIG) this.tooBig.delete(this.tooBig.keys().next().value as string);
      }
      return outcome;
    } finally {
      this.bytes -= reserved;
    }
  }

  /** Drops least recently used copies until `bytes` more fit (loads in progress keep their reservations). */
  private makeRoom(bytes: number): void {
    for (const [id, entry] of this.entries) {
      if (this.bytes + bytes <= this.maxBytes) return;
      this.entries.delete(id);
      this.bytes -= entry.surface.bytes;
    }
  }

  /** The best `limit` items (best chunk each) among those the filters let through. */
  private async rank(surface: LoadedSurface, options: SearchOptions, vector: readonly number[], limit: number) {
    const mask = itemMask(surface, options);
    if (mask === 'none' || surface.rows === 0) return [];
    // The query as platform.vector_dot sees it: `formatReal` sends float32 values.
    const query = Float64Array.from(vector, Math.fround);
    const base = {
      memory: surface.memory,
      dims: surface.dims,
      scratchBase: surface.scratchBase,
      scratchStride: surface.scratchStride,
      windowRows: WINDOW_ROWS,
      itemStart: surface.itemStart,
      query,
      mask,
      limit,
    };
    const jobs: ScanJob[] = slices(surface, this.threads.threads).map(([itemFrom, itemTo]) => ({ ...base, itemFrom, itemTo }));
    return mergeCandidates(await this.threads.scan(jobs), limit);
  }

  /**
   * The winners with their content, at the row versions that were scored; null when one of them is no longer
   * there (its chunks changed after the copy was loaded, so the generation moved: search again).
   */
  private async read(surface: LoadedSurface, winners: { score: number; item: number; row: number }[]): Promise<SearchHit[] | null> {
    if (winners.length === 0) return [];
    const { rows } = await this.pool.query<[string, string, string | null, string | null, string | null, string | null]>({
      text: `
        SELECT w.n::text, c.content, i.file_id::text, i.table_name, i.row_id, i.column_name
          FROM unnest($1::uuid[], $2::int[], $3::text[]) WITH ORDINALITY AS w (item_id, chunk_index, version, n)
          JOIN platform.embedding_chunks c
            ON c.item_id = w.item_id AND c.chunk_index = w.chunk_index AND c.xmin = w.version::xid
          JOIN platform.embedding_items i ON i.id = c.item_id`,
      values: [
        winners.map((w) => surface.itemIds[w.item]),
        winners.map((w) => surface.chunkIndex[w.row]),
        winners.map((w) => String(surface.versions[w.row])),
      ],
      rowMode: 'array',
    });
    if (rows.length !== winners.length) return null;
    const hits = new Array<SearchHit>(winners.length);
    for (const [n, content, fileId, tableName, rowId, columnName] of rows) {
      const w = winners[Number(n) - 1]!;
      hits[Number(n) - 1] = {
        item_id: surface.itemIds[w.item]!,
        chunk_index: surface.chunkIndex[w.row]!,
        content,
        score: w.score,
        file_id: fileId,
        table_name: tableName,
        row_id: rowId,
        column_name: columnName,
      };
    }
    return hits;
  }
}

/**
 * The items the search's filters let through, as SQL applies them to embedding_items: null for all, 'none' for
 * none (an empty list, or a model no item has).
 */
function itemMask(surface: LoadedSurface, options: SearchOptions): Uint8Array | null | 'none' {
  const items = surface.itemIds.length;
  let mask: Uint8Array | null = null;
  const keep = (allowed: (item: number) => boolean) => {
    mask ??= new Uint8Array(items).fill(1);
    for (let i = 0; i < items; i++) if (mask[i] && !allowed(i)) mask[i] = 0;
  };
  if (options.fileIds) {
    const ids = new Set(options.fileIds.filter(isUuid).map((id) => id.toLowerCase()));
    if (ids.size === 0) return 'none';
    keep((i) => ids.has(surface.fileIds[i] as string));
  }
  if (options.tableNames) {
    const allowed = new Uint8Array(surface.tables.length);
    for (const name of options.tableNames) {
      const code = surface.tables.indexOf(name);
      if (code >= 0) allowed[code] = 1;
    }
    if (!allowed.includes(1)) return 'none';
    keep((i) => surface.tableOf[i]! >= 0 && allowed[surface.tableOf[i]!] === 1);
  }
  if (options.model !== undefined) {
    const code = surface.models.indexOf(options.model);
    if (code < 0) return 'none';
    // Usually every item of a surface has the one model: no mask then.
    if (surface.models.length > 1 || surface.modelOf.includes(-1)) keep((i) => surface.modelOf[i] === code);
  }
  return mask;
}

/** Item ranges of about equal rows, one per thread at most, none smaller than MIN_SLICE_WORK. */
function slices(surface: LoadedSurface, threads: number): [number, number][] {
  const items = surface.itemIds.length;
  const parts = Math.max(1, Math.min(threads, Math.floor((surface.rows * surface.dims) / MIN_SLICE_WORK)));
  const bounds = [0];
  for (let p = 1; p < parts; p++) {
    const target = Math.floor((surface.rows * p) / parts);
    // The first item starting at or after the target row.
    let lo = bounds.at(-1)!;
    let hi = items;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (surface.itemStart[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    bounds.push(lo);
  }
  bounds.push(items);
  const out: [number, number][] = [];
  for (let p = 0; p < parts; p++) if (bounds[p]! < bounds[p + 1]!) out.push([bounds[p]!, bounds[p + 1]!]);
  return out;
}
