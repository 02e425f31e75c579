/**
 * Reads one workspace surface's chunk vectors of one size into shared WebAssembly memory, in one snapshot with its
 * generation (REPEATABLE READ): the copy holds exactly what was committed at that generation. Items are numbered in
 * id order (ties rank the way SQL's `ORDER BY item_id` does) and their chunks stored in that order, each item's in
 * chunk order, so that an item's chunks are consecutive rows.
 */
import type { EmbeddingSurface } from '@wds/db';
import type pg from 'pg';
import { copyOutBinary } from './copy-out.js';

/** A shared WebAssembly.Memory, as far as it is used here (the TypeScript libraries of this project do not declare it). */
export interface SharedMemory {
  readonly buffer: SharedArrayBuffer;
}
const { Memory } = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number; maximum: number; shared: true }) => SharedMemory } })
  .WebAssembly;

export interface SurfaceKey {
  /** Lower case. */
  workspaceId: string;
  surface: EmbeddingSurface;
  dims: number;
}

export const SURFACES: readonly EmbeddingSurface[] = ['file', 'table_row', 'column'];

/** Memory of a chunk besides its vector: its chunk index and row version (4 bytes each). */
export const CHUNK_OVERHEAD_BYTES = 8;
/** About what an item costs: its id and file id as strings, its codes and offsets, with JavaScript's overheads. */
export const ITEM_BYTES = 160;
/** Rows a thread scores per call of the kernel; its scores go to that thread's scratch space. */
export const WINDOW_ROWS = 4096;
const PAGE = 65_536;
const MAX_PAGES = 65_536;

/** Where things are in a surface's memory: vectors from 0 in blocks of 4 rows, then one scratch space per thread. */
export function memoryLayout(rows: number, dims: number, threads: number) {
  const scratchBase = Math.ceil(rows / 4) * 16 * dims;
  // A thread's query (float64) then its window of scores (float64), 16-byte aligned.
  const scratchStride = Math.ceil((8 * dims + 8 * WINDOW_ROWS) / 16) * 16;
  const pages = Math.max(1, Math.ceil((scratchBase + threads * scratchStride) / PAGE));
  return { scratchBase, scratchStride, pages };
}

/** What a copy counts against the cache's limit: its memory pages, its chunks' indexes and its items. */
export const surfaceBytes = (rows: number, items: number, dims: number, threads: number): number =>
  memoryLayout(rows, dims, threads).pages * PAGE + rows * CHUNK_OVERHEAD_BYTES + items * ITEM_BYTES;

/** A workspace surface's chunks of one size, as committed at `generation`. */
export interface LoadedSurface {
  generation: number;
  dims: number;
  rows: number;
  /** The vectors (rows by item, then chunk index; 4-row blocks interleaved by dimension) and the scratch spaces. */
  memory: SharedMemory;
  scratchBase: number;
  scratchStride: number;
  /** Item i's chunks are rows itemStart[i] .. itemStart[i + 1] - 1 (shared with the scan threads). */
  itemStart: Int32Array;
  /** Per row. */
  chunkIndex: Int32Array;
  /** Per row: the chunk's row version (xmin), to read exactly the version that was scored. */
  versions: Uint32Array;
  /** Per item ordinal, ascending. */
  itemIds: string[];
  fileIds: (string | null)[];
  /** Per item ordinal: the index of its table name / model in `tables` / `models`, -1 for none. */
  tableOf: Int32Array;
  tables: string[];
  modelOf: Int32Array;
  models: string[];
  /** What this copy counts against the cache's limit (`surfaceBytes`). */
  bytes: number;
}

export type LoadOutcome =
  | { kind: 'loaded'; surface: LoadedSurface }
  /** `admit` said no: more bytes than the cache may hold (now, or at all). */
  | { kind: 'refused'; generation: number; bytes: number }
  /** No generation is recorded for the surface: it cannot be kept current, search it in SQL. */
  | { kind: 'untracked' };

const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * Loads `key` on a connection of `pool`, laid out for `threads` scan threads. Once the chunks are counted,
 * `admit(bytes)` decides whether to go on (it may make room); when it says no, nothing more is read.
 */
export async function loadSurface(
  pool: Pick<pg.Pool, 'connect'>,
  key: SurfaceKey,
  threads: number,
  admit: (bytes: number) => boolean,
): Promise<LoadOutcome> {
  const { workspaceId, surface, dims } = key;
  // COPY takes no parameters: the values are checked here and quoted.
  if (!/^[0-9a-f-]{36}$/.test(workspaceId) || !SURFACES.includes(surface) || !Number.isInteger(dims) || dims < 1) {
    throw new Error(`cannot load surface ${JSON.stringify(key)}`);
  }
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const ofSurface = `i.workspace_id = ${literal(workspaceId)} AND i.surface = ${literal(surface)}`;
    // What platform.vector_dot scores (not NULL): one dimension of `dims` indexed from 1, no NULL element.
    const scored = `c.workspace_id = ${literal(workspaceId)} AND array_ndims(c.embedding) = 1 AND array_length(c.embedding, 1) = ${dims}
      AND array_lower(c.embedding, 1) = 1 AND array_position(c.embedding, NULL) IS NULL`;
    const generation = await client.query<{ generation: string }>(
      `SELECT generation::text AS generation FROM platform.embedding_generations
        WHERE workspace_id = ${literal(workspaceId)} AND surface = ${literal(surface)}`,
    );
    if (!generation.rows[0]) return { kind: 'untracked' };
    const listed = await client.query<[string, string | null, string | null, string | null, number]>({
      text: `SELECT i.id::text, i.file_id::text, i.table_name, i.model, coalesce(n.chunks, 0)::int
               FROM platform.embedding_items i
               LEFT JOIN (SELECT c.item_id, count(*) AS chunks FROM platform.embedding_chunks c WHERE ${scored} GROUP BY c.item_id) n
                 ON n.item_id = i.id
              WHERE ${ofSurface}
              ORDER BY i.id`,
      rowMode: 'array',
    });
    const itemCount = listed.rows.length;
    const itemStart = new Int32Array(new SharedArrayBuffer(4 * (itemCount + 1)));
    for (const [i, row] of listed.rows.entries()) itemStart[i + 1] = itemStart[i]! + row[4];
    const rows = itemStart[itemCount]!;
    const bytes = surfaceBytes(rows, itemCount, dims, threads);
    const layout = memoryLayout(rows, dims, threads);
    if (layout.pages > MAX_PAGES || !admit(bytes)) return { kind: 'refused', generation: Number(generation.rows[0].generation), bytes };

    const itemIds: string[] = new Array(itemCount);
    const fileIds: (string | null)[] = new Array(itemCount);
    const tableOf = new Int32Array(itemCount);
    const modelOf = new Int32Array(itemCount);
    const tables = new Codes();
    const models = new Codes();
    const ordinalOf = new Map<string, number>();
    for (const [i, [id, fileId, table, model]] of listed.rows.entries()) {
      itemIds[i] = id;
      fileIds[i] = fileId;
      tableOf[i] = tables.of(table);
      modelOf[i] = models.of(model);
      ordinalOf.set(id.replaceAll('-', ''), i);
    }

    const memory = new Memory({ initial: layout.pages, maximum: layout.pages, shared: true });
    const vectors = new Float32Array(memory.buffer, 0, layout.scratchBase / 4);
    const chunkIndex = new Int32Array(rows);
    const versions = new Uint32Array(rows);
    const next = itemStart.slice(0, itemCount);
    // No join that would sort the wide rows by item: items are looked up by id here (a hash semi-join there).
    await copyOutBinary(
      client,
      `SELECT c.item_id, c.chunk_index, c.xmin, c.embedding FROM platform.embedding_chunks c
        WHERE ${scored} AND c.item_id IN (SELECT i.id FROM platform.embedding_items i WHERE ${ofSurface})`,
      4,
      (buf, starts, lengths) => {
        const ordinal = ordinalOf.get(buf.toString('hex', starts[0]!, starts[0]! + 16));
        if (ordinal === undefined || next[ordinal]! >= itemStart[ordinal + 1]!) {
          throw new Error('a chunk that was not counted in the same snapshot');
        }
        const row = next[ordinal]!++;
        readVector(buf, starts[3]!, lengths[3]!, dims, vectors, row);
        chunkIndex[row] = buf.readInt32BE(starts[1]!);
        versions[row] = buf.readUInt32BE(starts[2]!);
      },
    );
    await client.query('COMMIT');
    for (let i = 0; i < itemCount; i++) {
      if (next[i] !== itemStart[i + 1]) throw new Error('fewer chunks than counted in the same snapshot');
    }
    sortChunks(itemStart, chunkIndex, versions, vectors, dims);
    return {
      kind: 'loaded',
      surface: {
        generation: Number(generation.rows[0].generation),
        dims,
        rows,
        memory,
        scratchBase: layout.scratchBase,
        scratchStride: layout.scratchStride,
        itemStart,
        chunkIndex,
        versions,
        itemIds,
        fileIds,
        tableOf,
        tables: tables.list,
        modelOf,
        models: models.list,
        bytes,
      },
    };
  } catch (err) {
    broken = true;
    throw err;
  } finally {
    if (broken) {
      // A connection left mid-COPY or mid-transaction is not given back to others.
      client.release(true);
    } else {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
    }
  }
}

/** Row `row`'s value of dimension `d` in the blocked layout (4 rows interleaved by dimension). */
const at = (row: number, d: number, dims: number) => (row >> 2) * 4 * dims + d * 4 + (row & 3);

/** Copies a binary `real[]` (checked by SQL: one dimension of `dims` from 1, no NULL) to `row`. */
function readVector(buf: Buffer, start: number, length: number, dims: number, out: Float32Array, row: number): void {
  if (length !== 20 + 8 * dims || buf.readInt32BE(start + 12) !== dims) throw new Error('unexpected array layout');
  // Each element is its length (4) and a big-endian float; a DataView reads them about 3 times faster than
  // Buffer.readFloatBE.
  const view = new DataView(buf.buffer, buf.byteOffset + start + 20, 8 * dims);
  const base = at(row, 0, dims);
  for (let d = 0; d < dims; d++) out[base + 4 * d] = view.getFloat32(8 * d + 4);
}

/** Puts each item's chunks in chunk order (they arrive in table order, which is nearly always that already). */
function sortChunks(itemStart: Int32Array, chunkIndex: Int32Array, versions: Uint32Array, vectors: Float32Array, dims: number): void {
  for (let i = 0; i + 1 < itemStart.length; i++) {
    const from = itemStart[i]!;
    const to = itemStart[i + 1]!;
    let sorted = true;
    for (let r = from + 1; r < to && sorted; r++) sorted = chunkIndex[r - 1]! < chunkIndex[r]!;
    if (sorted) continue;
    const rows = Array.from({ length: to - from }, (_, k) => from + k).sort((a, b) => chunkIndex[a]! - chunkIndex[b]!);
    const saved = rows.map((r) => ({
      chunk: chunkIndex[r]!,
      version: versions[r]!,
      vector: Float32Array.from({ length: dims }, (_, d) => vectors[at(r, d, dims)]!),
    }));
    for (const [k, s] of saved.entries()) {
      chunkIndex[from + k] = s.chunk;
      versions[from + k] = s.version;
      for (let d = 0; d < dims; d++) vectors[at(from + k, d, dims)] = s.vector[d]!;
    }
  }
}

/** Small integer codes for repeated strings (table names, models); null is -1. */
class Codes {
  readonly list: string[] = [];
  private readonly codes = new Map<string, number>();

  of(value: string | null): number {
    if (value === null) return -1;
    let code = this.codes.get(value);
    if (code === undefined) {
      code = this.list.length;
      this.list.push(value);
      this.codes.set(value, code);
    }
    return code;
  }
}
