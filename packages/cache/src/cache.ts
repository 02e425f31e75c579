/**
 * The process's caches: values tagged with invalidation topics (`ws:<id>`, `user:<id>`), which every change
 * publishes when it commits — in the changing process at once, in the others by LISTEN/NOTIFY (InvalidationBus).
 * Nothing is served while the bus's listener is down, a value loaded while an invalidation happened is not kept,
 * entries expire after `ttlMs` (a safety net: invalidation is what keeps them right), and what is held is bounded
 * in entries and in bytes (one value, say an STF version with its code, may be megabytes).
 */

/** What a cache needs of an InvalidationBus (which the app's services carry as `bus`). */
export interface CacheBus {
  /** False while the listening connection is down: nothing is served then. */
  readonly healthy: boolean;
  /** Bumped on every invalidation. */
  readonly generation: number;
  subscribe(listener: (topic: string) => void): () => void;
}

export interface TopicCacheOptions {
  /** How long an entry may be served. 0 caches nothing. */
  ttlMs: number;
  maxEntries?: number;
  /** Bytes all entries may hold together (as their `sizeOf` counts them); an entry over an eighth of it is not kept. */
  maxBytes?: number;
}

interface Entry {
  value: unknown;
  topics: string[];
  bytes: number;
  expiresAt: number;
}

/** The topic a workspace's entries are dropped by: the one the routes publish for every change of the workspace. */
export const workspaceTopic = (workspaceId: string): string => `ws:${workspaceId}`;

const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;

/** `V`: what every value of this cache is (a cache of values of many kinds says `unknown`, and each read its own). */
export class TopicCache<V = unknown> {
  readonly #bus: CacheBus;
  readonly #ttlMs: number;
  readonly #maxBytes: number;
  readonly #maxEntries: number;
  /** Oldest use first (a hit moves its entry to the end). */
  readonly #entries = new Map<string, Entry>();
  /** Topic → the keys of its entries. */
  readonly #byTopic = new Map<string, Set<string>>();
  #bytes = 0;

  constructor(bus: CacheBus, opts: TopicCacheOptions) {
    this.#bus = bus;
    this.#ttlMs = Math.max(0, opts.ttlMs);
    this.#maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    this.#maxEntries = opts.maxEntries ?? 10_000;
    bus.subscribe((topic) => (topic === '*' ? this.clear() : this.#dropTopic(topic)));
  }

  get(key: string): V | undefined {
    if (!this.#bus.healthy) return undefined;
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= Date.now()) {
      this.#delete(key);
      return undefined;
    }
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e.value as V;
  }

  /**
   * Reads through the cache. `load` runs on a miss; its result is kept under `topics` only if no invalidation
   * happened while it ran (it may have read the state from before the change) and it is small enough.
   */
  async through<T extends V>(
    key: string,
    topics: string[] | ((value: T) => string[]),
    load: () => Promise<T>,
    sizeOf: (value: T) => number = () => 0,
  ): Promise<T> {
    const hit = this.get(key);
    if (hit !== undefined) return hit as T;
    const generation = this.#bus.generation;
    const value = await load();
    if (this.#ttlMs > 0 && this.#bus.healthy && generation === this.#bus.generation) {
      this.#set(key, typeof topics === 'function' ? topics(value) : topics, value, sizeOf(value));
    }
    return value;
  }

  /** A value of one workspace: its key is the workspace's own, and the workspace's topic drops it. */
  throughWorkspace<T extends V>(workspaceId: string, key: string, load: () => Promise<T>, sizeOf?: (value: T) => number): Promise<T> {
    const topic = workspaceTopic(workspaceId);
    return this.through(`${topic}\u0000${key}`, [topic], load, sizeOf);
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

  #set(key: string, topics: string[], value: unknown, bytes: number): void {
    if (bytes > this.#maxBytes / 8) return;
    this.#delete(key);
    while (this.#entries.size > 0 && (this.#bytes + bytes > this.#maxBytes || this.#entries.size >= this.#maxEntries)) {
      this.#delete(this.#entries.keys().next().value as string);
    }
    this.#entries.set(key, { value, topics, bytes, expiresAt: Date.now() + this.#ttlMs });
    this.#bytes += bytes;
    for (const topic of topics) {
      const keys = this.#byTopic.get(topic) ?? new Set<string>();
      keys.add(key);
      this.#byTopic.set(topic, keys);
    }
  }

  #delete(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#bytes -= e.bytes;
    for (const topic of e.topics) {
      const keys = this.#byTopic.get(topic);
      keys?.delete(key);
      if (keys?.size === 0) this.#byTopic.delete(topic);
    }
  }

  #dropTopic(topic: string): void {
    const keys = this.#byTopic.get(topic);
    if (!keys) return;
    for (const key of [...keys]) this.#delete(key);
  }
}

/**
 * Freezes a cached value's plain objects and arrays, all the way down (byte buffers stay as they are): a value is
 * shared by every reader, so no one may change what the next one gets.
 */
export function freezeDeep<T>(value: T): T {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const v of Object.values(value)) freezeDeep(v);
  return value;
}
