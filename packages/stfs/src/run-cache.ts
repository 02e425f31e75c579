import { type CacheBus, TopicCache } from '@wds/cache';

/**
 * The run cache of a process (what STF and workflow runs read of the platform tables: versions with their sealed
 * secrets, workflows), built once with the process's services: none with a TTL of 0 — every run reads the database.
 */
export function createRunCache(bus: CacheBus, ttlMs: number): TopicCache | undefined {
  return ttlMs > 0 ? new TopicCache(bus, { ttlMs }) : undefined;
}
