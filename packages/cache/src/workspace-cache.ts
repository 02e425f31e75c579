/**
 * Values that belong to one workspace each (say, what a run reads of the platform tables: an STF version with its
 * code and sealed secrets), kept in process. Every entry is dropped by its workspace's topic `ws:<id>`, which every
 * change to the workspace publishes when it commits: in the changing process at once, in the others by
 * LISTEN/NOTIFY (InvalidationBus). The rules are TopicCache's — nothing is served while the bus's listener is
 * down, a value loaded while an invalidation happened is not kept, entries expire after `ttlMs` — plus a bound on
 * the bytes held, since one value may be megabytes.
 */

/** What the cache needs of an InvalidationBus (which the app's services carry as `bus`). */
export interface CacheBus {
  /** False while the listening connection is down: nothing is served then. */
  readonly healthy: boolean;
  /** Bumped on every invalidation. */
  readonly generation: number;
  subscribe(listener: (topic: string) => void): () => void;
}

export interface WorkspaceCacheOptions {
  /** How long an entry may be served (a safety net: invalidation is what keeps it right). 0 caches nothing. */
  ttlMs: number;
  /** Bytes all entries may hold together (as their `sizeOf` counts them); an entry over an eighth of it is not kept. */
  maxBytes?: number;
  maxEntries?: number;
}

interface Entry {
  value: unknown;
  topic: string;
  bytes: number;
  expiresAt: number;
}

/** The topic a workspace's entries are dropped by: the one the routes publish for every change of the workspace. */
export const workspaceTopic = (workspaceId: string): string => `ws:${workspaceId}`;

const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;

export class WorkspaceCache {
  readonly #bus: CacheBus;
  readonly #ttlMs: number;
  readonly #maxBytes: number;
  readonly #maxEntries: number;
  /** Oldest use first (a hit moves its entry to the end). */
  readonly #entries = new Map<string, Entry>();
  /** Topic → the keys of its entries. */
  readonly #byTopic = new Map<string, Set<string>>();
  #bytes = 0;

  constructor(bus: CacheBus, opts: WorkspaceCacheOptions) {
    this.#bus = bus;
    this.#ttlMs = Math.max(0, opts.ttlMs);
    this.#maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    this.#maxEntries = opts.maxEntries ?? 10_000;
    bus.subscribe((topic) => (topic === '*' ? this.clear() : this.#dropTopic(topic)));
  }

  /**
   * The value under `key` of the workspace, loaded by `load` on a miss. It is kept only if no invalidation
   * happened while `load` ran (it may have read the state from before a change) and it is small enough.
   */
  async through<V>(workspaceId: string, key: string, load: () => Promise<V>, sizeOf: (value: V) => number): Promise<V> {
    const topic = workspaceTopic(workspaceId);
    const full = `${topic}\u0000${key}`;
    const hit = this.#get(full);
    if (hit) return hit.value as V;
    const generation = this.#bus.generation;
    const value = await load();
    if (this.#ttlMs > 0 && this.#bus.healthy && generation === this.#bus.generation) this.#set(full, topic, value, sizeOf(value));
    return value;
  }

  clear(): void {
    this.#entries.clear();
    this.#byTopic.clear();
    this.#bytes = 0;
  }

  get size(): number {
    return this.#entries.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  #get(key: string): Entry | undefined {
    if (!this.#bus.healthy) return undefined;
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= Date.now()) {
      this.#delete(key);
      return undefined;
    }
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e;
  }

  #set(key: string, topic: string, value: unknown, bytes: number): void {
    if (bytes > this.#maxBytes / 8) return;
    this.#delete(key);
    while (this.#entries.size > 0 && (this.#bytes + bytes > this.#maxBytes || this.#entries.size >= this.#maxEntries)) {
      this.#delete(this.#entries.keys().next().value as string);
    }
    this.#entries.set(key, { value, topic, bytes, expiresAt: Date.now() + this.#ttlMs });
    this.#bytes += bytes;
    const keys = this.#byTopic.get(topic) ?? new Set<string>();
    keys.add(key);
    this.#byTopic.set(topic, keys);
  }

  #delete(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#bytes -= e.bytes;
    const keys = this.#byTopic.get(e.topic);
    keys?.delete(key);
    if (keys?.size === 0) this.#byTopic.delete(e.topic);
  }

  #dropTopic(topic: string): void {
    const keys = this.#byTopic.get(topic);
    if (!keys) return;
    for (const key of [...keys]) this.#delete(key);
  }
}

/**
 * Freezes a cached value's plain objects and arrays, all the way down (byte buffers stay as they are): a value is
 * shared by every run that reads it, so no run may change what the next one gets.
 */
export function freezeDeep<T>(value: T): T {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const v of Object.values(value)) freezeDeep(v);
  return value;
}
