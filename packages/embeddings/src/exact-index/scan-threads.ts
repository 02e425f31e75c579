/**
 * Scoring off the event loop: a few worker threads share each surface's memory (a shared WebAssembly.Memory, never
 * copied); a thread scores a slice of a surface's items for a query with the SIMD kernel (dot-kernel.ts), a window
 * of rows at a time into its own scratch space, and keeps its best items. The thread's code is a string run with
 * `eval` (as the storage package's hash thread), so tests on the TypeScript sources and the built package run the same.
 *
 * An item's score is its best chunk's (the first such chunk in chunk order on ties); items rank by score, then
 * ordinal (their id order). The slices split at item boundaries, so each item is scored by one thread.
 */
import { Worker } from 'node:worker_threads';
import { DOT_KERNEL_WASM } from './dot-kernel.js';
import type { SharedMemory } from './load.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const kernel = new WebAssembly.Module(Buffer.from(${JSON.stringify(Buffer.from(DOT_KERNEL_WASM).toString('base64'))}, 'base64'));
const slot = workerData.slot;

function worse(scores, items, a, b) {
  return scores[a] < scores[b] || (scores[a] === scores[b] && items[a] > items[b]);
}
function swap(scores, items, rows, a, b) {
  let s = scores[a]; scores[a] = scores[b]; scores[b] = s;
  s = items[a]; items[a] = items[b]; items[b] = s;
  s = rows[a]; rows[a] = rows[b]; rows[b] = s;
}

function scan(job) {
  const { memory, dims, scratchBase, scratchStride, windowRows, itemStart, itemFrom, itemTo, query, mask, limit } = job;
  const score = new WebAssembly.Instance(kernel, { env: { memory } }).exports.score;
  const queryAt = scratchBase + slot * scratchStride;
  const outAt = queryAt + 8 * dims;
  new Float64Array(memory.buffer, queryAt, dims).set(query);

  const capacity = Math.max(0, Math.min(limit, itemTo - itemFrom));
  // A min-heap of the best items so far: its root is the worst of them.
  const scores = new Float64Array(capacity);
  const items = new Int32Array(capacity);
  const rows = new Int32Array(capacity);
  let size = 0;
  const keep = (top, item, row) => {
    if (size < capacity) {
      let i = size++;
      scores[i] = top; items[i] = item; rows[i] = row;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!worse(scores, items, i, parent)) break;
        swap(scores, items, rows, i, parent);
        i = parent;
      }
    } else if (capacity > 0 && (top > scores[0] || (top === scores[0] && item < items[0]))) {
      scores[0] = top; items[0] = item; rows[0] = row;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < size && worse(scores, items, l, m)) m = l;
        if (r < size && worse(scores, items, r, m)) m = r;
        if (m === i) break;
        swap(scores, items, rows, i, m);
        i = m;
      }
    }
  };

  // Items' rows are consecutive: walk the rows once, a window at a time, carrying the current item's best chunk.
  const rowFrom = itemStart[itemFrom], rowTo = itemStart[itemTo];
  let item = itemFrom, itemEnd = itemStart[item + 1];
  let best = 0, bestRow = -1;
  for (let block = rowFrom >> 2; block * 4 < rowTo; block += windowRows >> 2) {
    const blocks = Math.min(windowRows >> 2, ((rowTo + 3) >> 2) - block);
    score(block * 16 * dims, queryAt, outAt, blocks, dims);
    const out = new Float64Array(memory.buffer, outAt, blocks * 4);
    const last = Math.min(rowTo, (block + blocks) * 4);
    for (let row = Math.max(rowFrom, block * 4); row < last; row++) {
      while (row >= itemEnd) {
        if (bestRow >= 0) keep(best, item, bestRow);
        bestRow = -1;
        item++;
        itemEnd = itemStart[item + 1];
      }
      if (mask !== null && mask[item] === 0) continue;
      const s = out[row - block * 4];
      if (bestRow < 0 || s > best) { best = s; bestRow = row; }
    }
  }
  if (bestRow >= 0) keep(best, item, bestRow);
  return { scores: scores.slice(0, size), items: items.slice(0, size), rows: rows.slice(0, size) };
}

parentPort.on('message', (job) => {
  try {
    const { scores, items, rows } = scan(job);
    parentPort.postMessage({ id: job.id, scores, items, rows }, [scores.buffer, items.buffer, rows.buffer]);
  } catch (err) {
    parentPort.postMessage({ id: job.id, error: String((err && err.stack) || err) });
  }
});
`;

export interface ScanJob {
  /** The surface's memory: vectors from 0 (4-row blocks interleaved by dimension), then a scratch space per thread. */
  memory: SharedMemory;
  dims: number;
  scratchBase: number;
  scratchStride: number;
  /** Rows scored per kernel call (a multiple of 4 that fits in a scratch space). */
  windowRows: number;
  /** Item i's rows are itemStart[i] .. itemStart[i + 1] - 1. */
  itemStart: Int32Array;
  itemFrom: number;
  itemTo: number;
  /** The query's values as float32, held in float64. */
  query: Float64Array;
  /** Per item ordinal, 0 to leave it out; null: every item. */
  mask: Uint8Array | null;
  limit: number;
}

/** One slice's best items, in no particular order (a heap): `mergeCandidates` orders them. */
export interface Candidates {
  scores: Float64Array;
  items: Int32Array;
  rows: Int32Array;
}

export interface Candidate {
  score: number;
  item: number;
  row: number;
}

interface Pending {
  worker: Worker;
  resolve: (c: Candidates) => void;
  reject: (err: Error) => void;
}

export class ScanThreads {
  private readonly workers: (Worker | undefined)[];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private nextWorker = 0;
  private closed = false;

  constructor(count: number) {
    this.workers = new Array<Worker | undefined>(Math.max(1, Math.floor(count))).fill(undefined);
  }

  get threads(): number {
    return this.workers.length;
  }

  /** Scores the slices, handed to the threads in turn (a thread runs its jobs one after the other). */
  scan(jobs: ScanJob[]): Promise<Candidates[]> {
    if (this.closed) return Promise.reject(new Error('the vector index is closed'));
    return Promise.all(jobs.map((job) => this.run(job)));
  }

  private run(job: ScanJob): Promise<Candidates> {
    const slot = this.nextWorker++ % this.workers.length;
    const worker = this.thread(slot);
    const id = this.nextId++;
    return new Promise<Candidates>((resolve, reject) => {
      this.pending.set(id, { worker, resolve, reject });
      worker.ref();
      worker.postMessage({ id, ...job });
    });
  }

  private thread(slot: number): Worker {
    const existing = this.workers[slot];
    if (existing) return existing;
    const worker = new Worker(WORKER_SOURCE, { eval: true, name: 'wds-vector-scan', workerData: { slot } });
    // Referenced only while a scan is awaited, so idle threads never keep the process alive.
    worker.unref();
    worker.on('message', (m: { id: number; error?: string } & Partial<Candidates>) => {
      const waiter = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (![...this.pending.values()].some((p) => p.worker === worker)) worker.unref();
      if (!waiter) return;
      if (m.error !== undefined) waiter.reject(new Error(`vector scan failed: ${m.error}`));
      else waiter.resolve({ scores: m.scores!, items: m.items!, rows: m.rows! });
    });
    const fail = (err: Error) => {
      if (this.workers[slot] === worker) this.workers[slot] = undefined;
      for (const [id, p] of this.pending) {
        if (p.worker !== worker) continue;
        this.pending.delete(id);
        p.reject(err);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`vector scan thread exited (${code})`)));
    this.workers[slot] = worker;
    return worker;
  }

  /** Terminates the threads; scans in progress fail. */
  async close(): Promise<void> {
    this.closed = true;
    const running = this.workers.filter((w): w is Worker => w !== undefined);
    this.workers.fill(undefined);
    await Promise.all(running.map((w) => w.terminate()));
  }
}

/** The best `limit` candidates of all slices: score descending, then item ordinal (id order). */
export function mergeCandidates(parts: Candidates[], limit: number): Candidate[] {
  const all: Candidate[] = [];
  for (const p of parts) for (let i = 0; i < p.scores.length; i++) all.push({ score: p.scores[i]!, item: p.items[i]!, row: p.rows[i]! });
  return all.sort((a, b) => b.score - a.score || a.item - b.item).slice(0, limit);
}
