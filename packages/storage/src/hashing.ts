/**
 * The one read loop both blob stores share: pull chunks from the source and count them, hand them to the store's
 * writer in batches of about 1 MiB with at most one write in flight (so a slow disk or S3 slows the source down
 * instead of filling memory) and to the hashing thread with at most one batch queued, and stop early on the size
 * limit or the abort signal.
 */
import { BlobTooLargeError, type PutOptions } from './blob-store.js';
import { ThreadHash } from './hash-thread.js';

export interface Counted {
  size: number;
  /** Hex. */
  sha256: string;
}

/** The signal's reason when it is an Error (AbortSignal's default is a DOMException named AbortError), else an AbortError. */
export function abortReason(signal: AbortSignal): Error {
  if (signal.reason instanceof Error) return signal.reason;
  return Object.assign(new Error('The upload was aborted'), { name: 'AbortError', cause: signal.reason });
}

/**
 * Reads `source` to its end through `write`, returning its size and SHA-256. Rejects on the first of: a source
 * error, a `write` error, crossing `maxBytes` (BlobTooLargeError; the crossing chunk is not written), `signal`
 * aborting (even while the source or `write` is waiting). Leaving early stops the source: its iterator is returned
 * and, when it is a Node stream, it is destroyed.
 */
/** Size of the writes the stores are handed (chunks from the network are often 16–64 KiB). */
const WRITE_BATCH_BYTES = 1024 * 1024;

export async function pumpHashed(
  source: AsyncIterable<Uint8Array>,
  opts: PutOptions,
  write: (chunk: Uint8Array) => Promise<void>,
): Promise<Counted> {
  const { maxBytes, signal } = opts;
  // Hashed in the hashing thread, batch by batch, at most one batch behind the writes.
  const hash = new ThreadHash();
  let hashing: Promise<void> = Promise.resolve();
  let size = 0;
  let finished = false;
  const iterator = source[Symbol.asyncIterator]();
  // Chunks are gathered into writes of about WRITE_BATCH_BYTES, and one write may be in flight while the next batch
  // is read: the network and the disk work at the same time, and memory stays at about two batches.
  let batch: Uint8Array[] = [];
  let batchBytes = 0;
  let inFlight: Promise<void> = Promise.resolve();
  const flush = async () => {
    if (batchBytes === 0) return;
    const data = batch.length === 1 ? (batch[0] as Uint8Array) : Buffer.concat(batch, batchBytes);
    batch = [];
    batchBytes = 0;
    await raced(inFlight, signal);
    await raced(hashing, signal);
    hashing = hash.update(data);
    hashing.catch(() => undefined);
    inFlight = write(data);
    inFlight.catch(() => undefined);
  };
  try {
    for (;;) {
      const next = await raced(iterator.next(), signal);
      if (next.done) break;
      const chunk = next.value;
      if (!(chunk instanceof Uint8Array)) throw new TypeError('a blob source must yield Uint8Array chunks');
      size += chunk.byteLength;
      if (maxBytes !== undefined && size > maxBytes) throw new BlobTooLargeError(maxBytes);
      batch.push(chunk);
      batchBytes += chunk.byteLength;
      if (batchBytes >= WRITE_BATCH_BYTES) await flush();
    }
    await flush();
    await raced(inFlight, signal);
    await raced(hashing, signal);
    const sha256 = await hash.digest();
    finished = true;
    if (signal?.aborted) throw abortReason(signal);
    return { size, sha256 };
  } finally {
    if (!finished) {
      hash.drop();
      stopSource(source, iterator);
      // A failed run must not leave a write behind it: wait for the one in flight (its error is not this one's).
      await inFlight.catch(() => undefined);
    }
  }
}

/**
 * `p`, or the abort's rejection if it comes first. Each call listens to the signal only until `p` settles: racing
 * every chunk against one long-lived abort promise would leave a reaction per chunk on it, each holding that
 * chunk — a whole upload kept in memory.
 */
function raced<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  p.catch(() => undefined);
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Stops reading: destroys a Node stream (which also settles a pending read) and returns the iterator. */
function stopSource(source: AsyncIterable<Uint8Array>, iterator: AsyncIterator<Uint8Array>): void {
  const destroy = (source as { destroy?: unknown }).destroy;
  if (typeof destroy === 'function') {
    try {
      destroy.call(source);
    } catch {
      // already gone
    }
  }
  try {
    iterator.return?.()?.catch(() => undefined);
  } catch {
    // a source whose return() throws has nothing left to stop
  }
}
