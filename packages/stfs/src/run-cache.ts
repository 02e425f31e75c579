import { type CacheBus, TopicCache } from '@wds/cache';

/** One cache per bus (per process; each test harness has its own), made on first use. */
const caches = new WeakMap<CacheBus, TopicCache>();

/**
 * The run cache of a process's services: undefined (nothing cached) without a bus or with a TTL of 0 — tests that
 * hand in bare dependencies read the database every time.
 */
export function runCacheOf(deps: { bus?: CacheBus | undefined; config: { CACHE_TTL_MS?: number | undefined } }): TopicCache | undefined {
  const { bus } = deps;
  const ttlMs = deps.config.CACHE_TTL_MS ?? 0;
  if (!bus || !(ttlMs > 0)) return undefined;
  let cache = caches.get(bus);
  if (!cache) {
    cache = new TopicCache(bus, { ttlMs });
    caches.set(bus, cache);
  }
  return cache;
}
