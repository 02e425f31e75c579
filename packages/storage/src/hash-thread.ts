/**
 * SHA-256 off the event loop: one worker thread per process hashes the batches of every upload in flight (each
 * upload has its own hash there), so a large upload's ~0.7 ms of hashing per MiB runs on another core instead of
 * delaying the next socket read. Each upload copies a batch into its own buffer and transfers it; the thread hands
 * the buffer back with its ack, and the upload waits for that before sending the next batch — one buffer per upload,
 * reused, at most one batch queued.
 */
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const hashes = new Map();
parentPort.on('message', (m) => {
  if (m.type === 'update') {
    let h = hashes.get(m.id);
    if (!h) { h = createHash('sha256'); hashes.set(m.id, h); }
    h.update(m.data);
    // The buffer goes back to its upload for the next batch: no garbage piles up in this thread.
    parentPort.postMessage({ id: m.id, buffer: m.data.buffer }, [m.data.buffer]);
  } else if (m.type === 'digest') {
    const h = hashes.get(m.id) || createHash('sha256');
    hashes.delete(m.id);
    parentPort.postMessage({ id: m.id, digest: h.digest('hex') });
  } else if (m.type === 'drop') {
    hashes.delete(m.id);
  }
});
`;

interface Reply {
  digest?: string;
  buffer?: ArrayBuffer;
}
type Waiter = { resolve: (reply: Reply) => void; reject: (err: Error) => void };

/** Batches are about 1 MiB; a little more room saves reallocating for a batch that ends past it. */
const MIN_BUFFER = 1024 * 1024 + 128 * 1024;

let worker: Worker | undefined;
let nextId = 0;
const waiting = new Map<number, Waiter>();

function failAll(err: Error): void {
  for (const w of waiting.values()) w.reject(err);
  waiting.clear();
  worker = undefined;
}

function thread(): Worker {
  if (worker) return worker;
  const w = new Worker(WORKER_SOURCE, { eval: true });
  // Referenced only while an answer is awaited, so an idle hashing thread never keeps the process alive.
  w.unref();
  w.on('message', (m: { id: number } & Reply) => {
    const waiter = waiting.get(m.id);
    waiting.delete(m.id);
    if (waiting.size === 0) w.unref();
    waiter?.resolve(m);
  });
  w.on('error', (err) => failAll(err));
  w.on('exit', (code) => failAll(new Error(`the hashing thread exited with code ${code}`)));
  worker = w;
  return w;
}

/** One upload's SHA-256, computed in the hashing thread. Call `update` in order, awaiting each, then `digest`. */
export class ThreadHash {
  private readonly id = ++nextId;
  private done = false;
  /** The buffer batches are copied into, back from the thread after each batch. */
  private spare: ArrayBuffer | undefined;

  private request(message: object, transfer: ArrayBuffer[] = []): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const w = thread();
      if (waiting.size === 0) w.ref();
      waiting.set(this.id, { resolve, reject });
      w.postMessage({ ...message, id: this.id }, transfer);
    });
  }

  /** Hashes a copy of `data` (the caller may reuse or write it meanwhile). */
  async update(data: Uint8Array): Promise<void> {
    const buffer = this.spare && this.spare.byteLength >= data.byteLength ? this.spare : new ArrayBuffer(Math.max(data.byteLength, MIN_BUFFER));
    this.spare = undefined;
    const copy = new Uint8Array(buffer, 0, data.byteLength);
    copy.set(data);
    const reply = await this.request({ type: 'update', data: copy }, [buffer]);
    this.spare = reply.buffer;
  }

  async digest(): Promise<string> {
    this.done = true;
    this.spare = undefined;
    return (await this.request({ type: 'digest' })).digest as string;
  }

  /** Forgets an unfinished hash (an upload that failed). */
  drop(): void {
    if (this.done) return;
    this.done = true;
    waiting.delete(this.id);
    if (waiting.size === 0) worker?.unref();
    worker?.postMessage({ type: 'drop', id: this.id });
  }
}
