import type { InvalidationBus } from './bus.js';

interface Entry<V> {
  value: V;
  topics: string[];
  expiresAt: number;
}

/**
 * A small in-process cache whose entries are tagged with invalidation topics and expire after `ttlMs` (a safety
 * net; invalidation is what keeps it correct). With ttlMs 0 it caches nothing.
 */
export class TopicCache<V> {
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly bus: InvalidationBus,
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {
    bus.subscribe((topic) => {
      if (topic === '*') this.entries.clear();
      else for (const [key, e] of this.entries) if (e.topics.includes(topic)) this.entries.delete(key);
    });
  }

  get(key: string): V | undefined {
    if (!this.bus.healthy) return undefined;
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /**
   * Reads through the cache. `load` runs on a miss; its result is kept only if no invalidation happened while
   * it ran (it may have read the state from before the change).
   */
  async through(key: string, topics: string[] | ((v: V) => string[]), load: () => Promise<V>): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const generation = this.bus.generation;
    const value = await load();
    if (this.ttlMs > 0 && this.bus.healthy && generation === this.bus.generation) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, { value, topics: typeof topics === 'function' ? topics(value) : topics, expiresAt: Date.now() + this.ttlMs });
    }
    return value;
  }

  get size(): number {
    return this.entries.size;
  }
}
