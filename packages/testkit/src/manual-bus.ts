/**
 * An invalidation bus driven by hand, for tests of caches (shaped like @wds/cache's InvalidationBus as the caches
 * see it): `invalidate` is what the changing process does after its commit, and what LISTEN delivers in the
 * others; `healthy = false` stands for a listener that is down.
 */
export class ManualBus {
  healthy = true;
  generation = 0;
  readonly #listeners = new Set<(topic: string) => void>();

  subscribe(listener: (topic: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  invalidate(topic: string): void {
    this.generation++;
    for (const l of this.#listeners) l(topic);
  }
}
