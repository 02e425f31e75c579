import { type Signal, useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';

export interface Loaded<T> {
  /** The value once loaded (null before). */
  data: Signal<T | null>;
  /** The failure of the last load (null when it succeeded). */
  error: Signal<unknown>;
  loading: Signal<boolean>;
  /** Loads again (after a change the page made). */
  reload: () => Promise<void>;
}

/** Loads a value when the page opens and whenever `deps` change; `reload` loads it again. */
export function useLoad<T>(fetcher: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const data = useSignal<T | null>(null);
  const error = useSignal<unknown>(null);
  const loading = useSignal(true);
  const reload = async () => {
    loading.value = true;
    try {
      data.value = await fetcher();
      error.value = null;
    } catch (err) {
      error.value = err;
    } finally {
      loading.value = false;
    }
  };
  useEffect(() => {
    reload();
  }, deps);
  return { data, error, loading, reload };
}
